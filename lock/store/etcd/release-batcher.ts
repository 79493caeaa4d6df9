/**
 * Coalesces concurrent releases into one etcd request: the releases that
 * arrive in one event-loop turn go out together as nested txns, each its own
 * compare-and-delete (token, session incarnation), so one failing compare does
 * not fail the others. A release is still exactly the same atomic operation;
 * only the round trip is shared. (Acquires are batched too, with a slot per
 * grant in its token: acquire-batcher.ts.)
 */
import type { Etcd3, ITxnRequest, ITxnResponse } from 'etcd3';
import { batchesOfDistinctKeys } from './key-batches.js';

export interface ReleaseAnswer {
  /** The release's own txn response (a nested one carries the batch's header). */
  response: ITxnResponse;
  /**
   * An earlier send of this txn went unanswered (it may have been applied): a failed compare may then
   * be this release's own delete seen again (landed-delete.ts).
   */
  resent: boolean;
}

interface PendingRelease {
  /** The lock key: etcd refuses a txn that writes one key twice, so one key per batch. */
  lockKey: Buffer;
  txn: ITxnRequest;
  resolve: (answer: ReleaseAnswer) => void;
  reject: (error: unknown) => void;
}

/** etcd's default --max-txn-ops is 128; each release deletes two keys. */
const MAX_BATCH = 60;

export class ReleaseBatcher {
  private pending: PendingRelease[] = [];
  private scheduled = false;

  constructor(
    private readonly client: () => Etcd3,
    /** Retries a write through unavailability (the store's own policy), telling whether it was resent. */
    private readonly write: <T>(attempt: () => Promise<T>) => Promise<{ result: T; resent: boolean }>,
  ) {}

  /**
   * Runs `txn` (a compare-and-delete whose repeat is a no-op) in the next batch;
   * resolves with its own response (for nested txns, the inner one).
   */
  submit(lockKey: Buffer, txn: ITxnRequest): Promise<ReleaseAnswer> {
    return new Promise((resolve, reject) => {
      this.pending.push({ lockKey, txn, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const queue = this.pending;
    this.pending = [];
    for (const batch of batchesOfDistinctKeys(queue, MAX_BATCH)) void this.send(batch);
  }

  private async send(batch: PendingRelease[]): Promise<void> {
    try {
      if (batch.length === 1) {
        const [only] = batch as [PendingRelease];
        const { result: response, resent } = await this.write(() => this.client().kv.txn(only.txn));
        only.resolve({ response, resent });
        return;
      }
      // Retrying the whole batch is safe: an applied delete fails its compare the second time.
      const { result: response, resent } = await this.write(() =>
        this.client().kv.txn({ compare: [], success: batch.map((request) => ({ request_txn: request.txn })), failure: [] }),
      );
      batch.forEach((request, index) => {
        const inner = response.responses[index]?.response_txn as ITxnResponse | undefined;
        if (inner) request.resolve({ response: { ...inner, header: response.header }, resent });
        else request.reject(new Error('etcd answered a release batch without the inner txn'));
      });
    } catch (error) {
      for (const request of batch) request.reject(error);
    }
  }
}
