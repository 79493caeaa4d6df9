/**
 * Splits one event-loop turn's requests into batches of at most `maxBatch`
 * with no key twice in a batch: the nested txns of one etcd txn all compare
 * against the state before it, so two requests on one key inside it could not
 * see each other. A repeated key goes to a later batch, in request order.
 */
export function batchesOfDistinctKeys<Request extends { lockKey: Buffer }>(queue: readonly Request[], maxBatch: number): Request[][] {
  const batches: Request[][] = [];
  let rest = queue;
  while (rest.length > 0) {
    const batch: Request[] = [];
    const later: Request[] = [];
    const keys = new Set<string>();
    for (const request of rest) {
      const name = request.lockKey.toString('latin1');
      if (batch.length < maxBatch && !keys.has(name)) {
        keys.add(name);
        batch.push(request);
      } else {
        later.push(request);
      }
    }
    batches.push(batch);
    rest = later;
  }
  return batches;
}
