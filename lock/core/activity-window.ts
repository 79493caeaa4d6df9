/**
 * Per-second counts over the last five minutes, for the admin summary's
 * 1m / 5m rates and SLO figures (A5). Prometheus holds the long history;
 * this is what one server saw recently, needing no Prometheus to show.
 */
const HORIZON_SECONDS = 300;

export class ActivityWindow {
  private readonly buckets = new Map<string, Float64Array>();
  private readonly totals = new Map<string, number>();
  private readonly stamps = new Float64Array(HORIZON_SECONDS);

  constructor(private readonly now: () => number) {}

  record(name: string, count = 1): void {
    const second = Math.floor(this.now() / 1000);
    const slot = second % HORIZON_SECONDS;
    if (this.stamps[slot] !== second) {
      this.stamps[slot] = second;
      for (const series of this.buckets.values()) series[slot] = 0;
    }
    let series = this.buckets.get(name);
    if (!series) this.buckets.set(name, (series = new Float64Array(HORIZON_SECONDS)));
    series[slot]! += count;
    this.totals.set(name, (this.totals.get(name) ?? 0) + count);
  }

  /** Events of `name` in the last `seconds` seconds. */
  count(name: string, seconds: number): number {
    const series = this.buckets.get(name);
    if (!series) return 0;
    const current = Math.floor(this.now() / 1000);
    let sum = 0;
    for (let s = current - Math.min(seconds, HORIZON_SECONDS) + 1; s <= current; s++) {
      const slot = ((s % HORIZON_SECONDS) + HORIZON_SECONDS) % HORIZON_SECONDS;
      if (this.stamps[slot] === s) sum += series[slot]!;
    }
    return sum;
  }

  /** Events per second over the last `seconds` seconds. */
  rate(name: string, seconds: number): number {
    return this.count(name, seconds) / seconds;
  }

  total(name: string): number {
    return this.totals.get(name) ?? 0;
  }
}
