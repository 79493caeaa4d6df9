/**
 * Coalesces concurrent releases into one etcd request: the releases that
 * arrive in one event-loop turn go out together as nested txns, each its own
 * compare-and-delete on (key, create revision = token), so one failing compare
 * does not fail the others. A release is still exactly the same atomic
 * operation; only the round trip is shared. Acquires are not coalesced: keys
 * created in one txn would share a create revision, and fencing tokens must be
 * unique across the store.
 */
import type { Etcd3, IKeyValue, IRequestOp, ITxnResponse } from 'etcd3';
import { createRevisionIs, deleteOp, deletedResult } from './ops.js';

interface PendingRelease {
  lockKey: Buffer;
  token: string;
  resolve: (deleted: IKeyValue | undefined) => void;
  reject: (error: unknown) => void;
}

/** etcd's default --max-txn-ops is 128. */
const MAX_BATCH = 128;

export class ReleaseBatcher {
  private pending: PendingRelease[] = [];
  private scheduled = false;

  constructor(
    private readonly client: () => Etcd3,
    /** Retries a write through unavailability (the store's own policy). */
    private readonly write: <T>(attempt: () => Promise<T>) => Promise<T>,
  ) {}

  /** Compare-and-delete; resolves with the deleted key-value, or undefined if the token no longer held. */
  release(lockKey: Buffer, token: string): Promise<IKeyValue | undefined> {
    return new Promise((resolve, reject) => {
      this.pending.push({ lockKey, token, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    let queue = this.pending;
    this.pending = [];
    while (queue.length > 0) {
      // etcd refuses a txn that touches one key twice: a repeat of a key waits for the next batch.
      const batch: PendingRelease[] = [];
      const later: PendingRelease[] = [];
      const keys = new Set<string>();
      for (const request of queue) {
        const name = request.lockKey.toString('latin1');
        if (batch.length < MAX_BATCH && !keys.has(name)) {
          keys.add(name);
          batch.push(request);
        } else {
          later.push(request);
        }
      }
      void this.send(batch);
      queue = later;
    }
  }

  private async send(batch: PendingRelease[]): Promise<void> {
    try {
      if (batch.length === 1) {
        const [only] = batch as [PendingRelease];
        const response = await this.write(() => this.client().kv.txn(this.compareAndDelete(only)));
        only.resolve(response.succeeded ? deletedResult(response, 0) : undefined);
        return;
      }
      const nested: IRequestOp[] = batch.map((request) => ({ request_txn: this.compareAndDelete(request) }));
      // Retrying the whole batch is safe: an applied delete fails its compare the second time.
      const response = await this.write(() => this.client().kv.txn({ compare: [], success: nested, failure: [] }));
      batch.forEach((request, index) => {
        const inner = response.responses[index]?.response_txn as ITxnResponse | undefined;
        request.resolve(inner?.succeeded ? deletedResult(inner, 0) : undefined);
      });
    } catch (error) {
      for (const request of batch) request.reject(error);
    }
  }

  private compareAndDelete(request: PendingRelease) {
    return { compare: [createRevisionIs(request.lockKey, request.token)], success: [deleteOp(request.lockKey)], failure: [] };
  }
}
