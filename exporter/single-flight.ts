/**
 * Shares one in-flight call among concurrent callers. A scrape collects
 * `lock_held` and `lock_sessions_active` together; both read the same store
 * summary, so a scrape costs one store round trip, not one per gauge.
 */
export function singleFlight<T>(run: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | undefined;
  return () => {
    inFlight ??= run().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
}
