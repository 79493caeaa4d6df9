/**
 * Availability SLO S1 as data: which requests count, which outcomes are bad,
 * the windows the burn-rate alerts need and the naming of the recorded series.
 * Rules, alerts and dashboards all read these names, so they cannot drift apart.
 */
import { METRICS, SLO_S1, type MetricSpec } from '../contract/metric-table.js';
import { valuesIn, type HistogramSeries } from './promql.js';

/** One request kind S1 counts: L4 via the acquire histogram's count, L5 and L6 via counters. */
export interface SloRoute {
  /** Value of the `route` label the recording rules attach. */
  readonly route: 'acquire' | 'renew' | 'release';
  readonly spec: MetricSpec;
  readonly series?: HistogramSeries;
  /** SLO_S1.badOutcomes that this metric's closed `outcome` set can actually carry. */
  readonly badOutcomes: readonly string[];
}

function route(name: SloRoute['route'], spec: MetricSpec, series?: HistogramSeries): SloRoute {
  const badOutcomes = valuesIn(spec, 'outcome', SLO_S1.badOutcomes);
  if (badOutcomes.length === 0) throw new Error(`${spec.name} carries none of the S1 bad outcomes`);
  return { route: name, spec, series, badOutcomes };
}

export const SLO_ROUTES: readonly SloRoute[] = [
  route('acquire', METRICS.lockAcquireSeconds, 'count'),
  route('renew', METRICS.lockRenewTotal),
  route('release', METRICS.lockReleaseTotal),
];

/** Share of requests allowed to fail: 1 − objective, rounded so 0.999 gives 0.001 exactly. */
export const ERROR_BUDGET = Number((1 - SLO_S1.objective).toPrecision(6));

/** Objective as a percentage for human text ("99.9%"). */
export const OBJECTIVE_PERCENT = `${Number((SLO_S1.objective * 100).toPrecision(6))}%`;
export const BUDGET_PERCENT = `${Number((ERROR_BUDGET * 100).toPrecision(6))}%`;

/** The SLO compliance window, e.g. "30d". */
export const COMPLIANCE_WINDOW = `${SLO_S1.windowDays}d`;

/**
 * Multi-window, multi-burn-rate tiers of the SRE workbook (chapter 5, table 5-8):
 * the long window measures the burn, the short one stops the alert soon after it ends.
 */
export interface BurnTier {
  readonly long: string;
  readonly short: string;
  /** Multiple of the budget rate; 1 spends exactly the budget in the compliance window. */
  readonly factor: number;
  readonly severity: 'critical' | 'warning';
  readonly for: string;
}

export const BURN_TIERS: readonly BurnTier[] = [
  { long: '1h', short: '5m', factor: 14.4, severity: 'critical', for: '2m' },
  { long: '6h', short: '30m', factor: 6, severity: 'critical', for: '15m' },
  { long: '1d', short: '2h', factor: 3, severity: 'warning', for: '1h' },
  { long: '3d', short: '6h', factor: 1, severity: 'warning', for: '3h' },
];

/** Every window a burn tier needs, shortest first, each recorded once. */
export const RATE_WINDOWS: readonly string[] = ['5m', '30m', '1h', '2h', '6h', '1d', '3d'];
for (const tier of BURN_TIERS) {
  for (const window of [tier.long, tier.short]) {
    if (!RATE_WINDOWS.includes(window)) throw new Error(`burn tier window ${window} is not recorded`);
  }
}

/** Names of the recorded series: `level:metric:operations` as in the Prometheus naming guide. */
export const RECORDED = {
  requestsRate: (window: string) => `holdfast:slo_requests:rate${window}`,
  errorsRate: (window: string) => `holdfast:slo_errors:rate${window}`,
  errorRatio: (window: string) => `holdfast:slo_errors:ratio_rate${window}`,
  requestsIncrease: `holdfast:slo_requests:increase${COMPLIANCE_WINDOW}`,
  errorsIncrease: `holdfast:slo_errors:increase${COMPLIANCE_WINDOW}`,
  errorRatioCompliance: `holdfast:slo_errors:ratio_increase${COMPLIANCE_WINDOW}`,
} as const;

/** The only label the SLO series are aggregated to: one SLI per backend, summed over instances. */
export const SLO_AGGREGATION_LABEL = 'backend';

/** Days until the budget is gone at a burn factor, for alert text. */
export function daysToExhaustion(factor: number): string {
  const days = SLO_S1.windowDays / factor;
  return Number.isInteger(days) ? `${days} days` : `about ${days.toFixed(1)} days`;
}
