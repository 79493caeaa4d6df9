/**
 * Group commit for acquires: the create-if-absent txns that arrive in one
 * event-loop turn go out as ONE etcd txn whose success ops are the nested txns
 * (RequestOp.request_txn, etcd >= 3.3), each with its own compares, so each
 * acquire succeeds or fails alone. etcd evaluates every nested compare against
 * the state before the txn, then applies the chosen branches: one raft entry,
 * one revision.
 *
 * That shared revision is why each request learns its slot (its position in
 * the batch) before its txn is built: the grant's token is revision × 1000 +
 * slot (grant-tokens.ts), so tokens stay unique and increase in request order
 * within the txn, and above every grant of an earlier txn.
 *
 * No retries here: a failed call rejects every request of its batch, and each
 * acquire re-decides through its own compare (which reads back whether its
 * write landed), as a lone acquire does.
 */
import type { Etcd3, ITxnRequest, ITxnResponse } from 'etcd3';
import { SLOTS_PER_REVISION, storedSlot } from './grant-tokens.js';
import { batchesOfDistinctKeys } from './key-batches.js';

export interface BatchedAnswer {
  /** The acquire's own txn response (a nested one carries the batch's header). */
  response: ITxnResponse;
  /** The stored slot the txn was built with. */
  slot: string;
}

interface PendingAcquire {
  lockKey: Buffer;
  build: (slot: string) => ITxnRequest;
  resolve: (answer: BatchedAnswer) => void;
  reject: (error: unknown) => void;
}

/** Below etcd's default --max-txn-ops (128 ops per txn level) and below the slots per revision. */
const MAX_BATCH = Math.min(100, SLOTS_PER_REVISION);

export class AcquireBatcher {
  private pending: PendingAcquire[] = [];
  private scheduled = false;

  constructor(
    private readonly client: () => Etcd3,
    /** False: every acquire is its own txn, sent at once (benches compare the two). */
    private readonly batching = true,
  ) {}

  /**
   * Runs the txn `build(slot)` returns in the next batch. The txn writes `lockKey`
   * (a mutex grant creates it; a multi-holder grant rewrites the key's anchor:
   * holders.ts) only if it is as its caller read it: etcd refuses a txn that writes
   * one key twice, so a key asked for twice in one turn goes into the next batch.
   */
  submit(lockKey: Buffer, build: (slot: string) => ITxnRequest): Promise<BatchedAnswer> {
    return new Promise((resolve, reject) => {
      if (!this.batching) {
        void this.send([{ lockKey, build, resolve, reject }]);
        return;
      }
      this.pending.push({ lockKey, build, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const queue = this.pending;
    this.pending = [];
    // A later batch of the same turn goes out once the earlier one is answered: calls in flight
    // together may reach etcd in either order, and a key asked for twice is decided in request order.
    for (const batch of batchesOfDistinctKeys(queue, MAX_BATCH)) await this.send(batch);
  }

  private async send(batch: PendingAcquire[]): Promise<void> {
    try {
      if (batch.length === 1) {
        const [only] = batch as [PendingAcquire];
        const slot = storedSlot(0);
        only.resolve({ response: await this.client().kv.txn(only.build(slot)), slot });
        return;
      }
      const slots = batch.map((_, index) => storedSlot(index));
      const response = await this.client().kv.txn({
        compare: [],
        success: batch.map((request, index) => ({ request_txn: request.build(slots[index]!) })),
        failure: [],
      });
      // Answered in request order: slot order, which is token order.
      batch.forEach((request, index) => {
        const inner = response.responses[index]?.response_txn as ITxnResponse | undefined;
        if (inner) request.resolve({ response: { ...inner, header: response.header }, slot: slots[index]! });
        else request.reject(new Error('etcd answered an acquire batch without the inner txn'));
      });
    } catch (error) {
      for (const request of batch) request.reject(error);
    }
  }
}
