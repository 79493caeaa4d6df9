/**
 * Coalesced point reads: the single-key reads that arrive in one event-loop turn go out
 * as ONE read-only txn (one gRPC call, one ReadIndex in etcd) instead of one Range call
 * each, through the stores' one turn batcher (statement-batcher.ts). Heartbeats and the
 * liveness checks of grants read one key each and arrive in bursts, so under load a read
 * costs a share of a call; alone it is the plain Range it was. Every answer is as
 * linearizable as a lone Range: the txn is served after a ReadIndex like any read.
 */
import type { Etcd3, IKeyValue } from 'etcd3';
import { StatementBatcher } from '../statement-batcher.js';
import { range, readTxn } from './etcd-client.js';
import { rangeResult } from './ops.js';

/** Well below etcd's default --max-txn-ops (128). */
const MAX_BATCH = 100;

export class KeyReadBatcher {
  private readonly reads: StatementBatcher<Buffer, IKeyValue | undefined>;

  constructor(client: () => Etcd3) {
    this.reads = new StatementBatcher(async (keys) => {
      if (keys.length === 1) return [(await range(client(), { key: keys[0]!, keys_only: true })).kvs[0]];
      const response = await readTxn(client(), { success: keys.map((key) => ({ request_range: { key, keys_only: true } })) });
      return keys.map((_, index) => rangeResult(response, index));
    }, MAX_BATCH);
  }

  /** The key's current value with its revisions (keys only), or undefined when absent. */
  read(key: Buffer): Promise<IKeyValue | undefined> {
    return this.reads.submit(key);
  }
}
