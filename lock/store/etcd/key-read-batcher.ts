/**
 * Coalesced point reads: the single-key reads that arrive in one event-loop turn go out
 * as ONE read-only txn (one gRPC call, one ReadIndex in etcd) instead of one Range call
 * each. Heartbeats and the liveness checks of grants read one key each and arrive in
 * bursts, so under load a read costs a share of a call, not a call; alone it is the plain
 * Range it was (one call, sent on the next turn). Every answer is as linearizable as a
 * lone Range: the txn is served after a ReadIndex like any read.
 */
import type { Etcd3, IKeyValue } from 'etcd3';
import { range, readTxn } from './etcd-client.js';
import { rangeResult } from './ops.js';

/** Well below etcd's default --max-txn-ops (128). */
const MAX_BATCH = 100;

interface PendingRead {
  key: Buffer;
  resolve: (kv: IKeyValue | undefined) => void;
  reject: (error: unknown) => void;
}

export class KeyReadBatcher {
  private pending: PendingRead[] = [];
  private scheduled = false;

  constructor(private readonly client: () => Etcd3) {}

  /** The key's current value with its revisions (keys only), or undefined when absent. */
  read(key: Buffer): Promise<IKeyValue | undefined> {
    return new Promise((resolve, reject) => {
      this.pending.push({ key, resolve, reject });
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
    for (let start = 0; start < queue.length; start += MAX_BATCH) void this.send(queue.slice(start, start + MAX_BATCH));
  }

  private async send(batch: PendingRead[]): Promise<void> {
    try {
      if (batch.length === 1) {
        // Alone: the plain Range it always was.
        const [only] = batch as [PendingRead];
        only.resolve((await range(this.client(), { key: only.key, keys_only: true })).kvs[0]);
        return;
      }
      const response = await readTxn(this.client(), {
        success: batch.map(({ key }) => ({ request_range: { key, keys_only: true } })),
      });
      batch.forEach((read, index) => read.resolve(rangeResult(response, index)));
    } catch (error) {
      for (const read of batch) read.reject(error);
    }
  }
}
