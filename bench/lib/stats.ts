/** Summary statistics over cycle latencies (milliseconds). */

export interface LatencySummary {
  cycles: number;
  cyclesPerSecond: number;
  p50Millis: number;
  p99Millis: number;
}

/** Nearest-rank percentile of an ascending array; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function summarise(latenciesMillis: readonly number[], measuredSeconds: number): LatencySummary {
  const sorted = [...latenciesMillis].sort((a, b) => a - b);
  return {
    cycles: sorted.length,
    cyclesPerSecond: sorted.length / measuredSeconds,
    p50Millis: percentile(sorted, 50),
    p99Millis: percentile(sorted, 99),
  };
}
