/**
 * What a client can prove about a TTL'd thing (a grant, a session) from its own
 * monotonic clock, so a test can tell "ended early" (a bug) from "its TTL really
 * passed because this machine was slow" (not a bug) without racing the machine.
 *
 * A request sent at `s` that (re)started a TTL and succeeded was applied by the store
 * at some instant `a >= s`; the store then keeps the thing live until at least
 * `a + ttl >= s + ttl` on its own clock (PostgreSQL's clock_timestamp(), etcd's lease
 * clock: both run at this machine's rate; etcd rounds TTLs up, never down). Nothing
 * comes back to life, so the thing is provably live up to `max(s) + ttl`. A step
 * answered before that instant happened while it was live, however slow the machine:
 * the step must have found it live. A step answered later proves nothing either way.
 */
export class TtlWitness {
  private liveUntil = Number.NEGATIVE_INFINITY;
  /** The smallest (live-until − answered-at) over the steps asked about: how close the run came to the TTL. */
  smallestMargin = Number.POSITIVE_INFINITY;

  constructor(readonly ttlMillis: number) {}

  /** A request sent at `sentAt` (performance.now()) (re)started the TTL and succeeded. */
  started(sentAt: number): void {
    this.liveUntil = Math.max(this.liveUntil, sentAt + this.ttlMillis);
  }

  /** Whether a step answered at `answeredAt` (performance.now()) provably ran while the thing was live. */
  mustBeLive(answeredAt: number): boolean {
    const margin = this.liveUntil - answeredAt;
    if (margin > 0) this.smallestMargin = Math.min(this.smallestMargin, margin);
    return margin > 0;
  }
}

/** A request with the instants it was sent and answered (performance.now()). */
export async function timed<T>(request: () => Promise<T>): Promise<{ answer: T; sentAt: number; answeredAt: number }> {
  const sentAt = performance.now();
  const answer = await request();
  return { answer, sentAt, answeredAt: performance.now() };
}
