/**
 * A per-client estimate of one round trip, so the acquire loop does not
 * start a retry whose answer could only arrive after the deadline.
 * Exponentially weighted; the first sample seeds it.
 */
export class RoundTripEstimator {
  private estimate: number | undefined;

  constructor(private readonly weight = 0.25) {}

  observe(millis: number): void {
    const sample = Math.max(0, millis);
    this.estimate = this.estimate === undefined ? sample : this.estimate + this.weight * (sample - this.estimate);
  }

  /** Milliseconds; 0 before the first sample. */
  get millis(): number {
    return this.estimate ?? 0;
  }
}
