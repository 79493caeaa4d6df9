/** The SQL store's statement batcher: one batch per turn, and group commit under maxInFlight. */
import { expect, test } from 'vitest';
import { StatementBatcher } from '../../lock/store/statement-batcher.js';

function deferred() {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  return { gate, release };
}

test('calls of one turn share one batch; each caller gets its own result', async () => {
  const batches: number[][] = [];
  const batcher = new StatementBatcher(async (batch: number[]) => {
    batches.push(batch);
    return batch.map((n) => n * 10);
  });
  expect(await Promise.all([1, 2, 3].map((n) => batcher.submit(n)))).toEqual([10, 20, 30]);
  expect(batches).toEqual([[1, 2, 3]]);
});

test('maxInFlight 1: calls arriving while a batch runs wait and then go out together', async () => {
  const batches: number[][] = [];
  const first = deferred();
  const batcher = new StatementBatcher(
    async (batch: number[]) => {
      batches.push(batch);
      if (batches.length === 1) await first.gate;
      return batch;
    },
    256,
    1,
  );
  const a = batcher.submit(1);
  await new Promise((r) => setImmediate(r)); // the first batch is now running
  const later = [batcher.submit(2)];
  await new Promise((r) => setImmediate(r));
  later.push(batcher.submit(3));
  await new Promise((r) => setImmediate(r));
  expect(batches).toEqual([[1]]); // 2 and 3 wait for the running batch
  first.release();
  expect(await Promise.all([a, ...later])).toEqual([1, 2, 3]);
  expect(batches).toEqual([[1], [2, 3]]);
});

test('a failed batch rejects each of its callers', async () => {
  const batcher = new StatementBatcher(async (_batch: number[]): Promise<number[]> => {
    throw new Error('down');
  });
  const results = await Promise.allSettled([batcher.submit(1), batcher.submit(2)]);
  expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
});
