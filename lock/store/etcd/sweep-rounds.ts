/**
 * The etcd sweeps end each lapsed record with its own guarded txn (and reads before it). One
 * after another that is ~3 ms a session, 300/s: an expiry storm of 100,000 sessions took over
 * five minutes. In rounds of concurrent ends the store's write batcher packs them into shared
 * round trips. Every end is already safe beside another instance's sweep of the same record (its
 * txn compares what it read), so ends racing each other here is nothing new.
 */
export const SWEEP_CONCURRENCY = 32;

/**
 * End `candidates` in order, `SWEEP_CONCURRENCY` at a time, until `limit` ended; null means
 * "not ended here" (gone meanwhile, or ended elsewhere). Results keep the candidates' order.
 */
export async function endInRounds<T, R>(candidates: readonly T[], limit: number, end: (candidate: T) => Promise<R | null>): Promise<R[]> {
  const ended: R[] = [];
  let next = 0;
  while (next < candidates.length && ended.length < limit) {
    const round = candidates.slice(next, next + Math.min(SWEEP_CONCURRENCY, limit - ended.length));
    next += round.length;
    for (const result of await Promise.all(round.map(end))) if (result !== null) ended.push(result);
  }
  return ended;
}
