/**
 * Shares one in-flight call among concurrent callers: a background refresh and
 * the first scrape after start-up never run two store counts at once.
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
