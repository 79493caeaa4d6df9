/**
 * Availability SLO S1 as data: which requests count, which outcomes are bad,
 * the windows the burn-rate alerts need and the naming of the recorded series.
 * Rules, alerts and dashboards all read these names, so they cannot drift apart.
 * The objective and the burn tiers come from the generator config.
 */
import { METRICS, SLO_S1, type MetricSpec } from '../contract/metric-table.js';
import { SEVERITY, durationSeconds, type BurnTierConfig, type MonitoringConfig } from './config.js';
import { valuesIn, type HistogramSeries } from './promql.js';

/** One request kind S1 counts: L4 via the acquire histogram's count, L5 and L6 via counters. */
export interface SloRoute {
  /** Value of the `route` label the recording rules attach. */
  readonly route: 'acquire' | 'renew' | 'release';
  readonly spec: MetricSpec;
  readonly series?: HistogramSeries;
  /** SLO_S1.badOutcomes that this metric's closed `outcome` set can actually carry. */
  readonly badOutcomes: readonly string[];
  /** SLO_S1.excludedOutcomes this metric can carry: left out of the request count too. */
  readonly excludedOutcomes: readonly string[];
}

function route(name: SloRoute['route'], spec: MetricSpec, series?: HistogramSeries): SloRoute {
  const badOutcomes = valuesIn(spec, 'outcome', SLO_S1.badOutcomes);
  if (badOutcomes.length === 0) throw new Error(`${spec.name} carries none of the S1 bad outcomes`);
  const excludedOutcomes = valuesIn(spec, 'outcome', SLO_S1.excludedOutcomes);
  return { route: name, spec, series, badOutcomes, excludedOutcomes };
}

export const SLO_ROUTES: readonly SloRoute[] = [
  route('acquire', METRICS.lockAcquireSeconds, 'count'),
  route('renew', METRICS.lockRenewTotal),
  route('release', METRICS.lockReleaseTotal),
];

/** The SLO compliance window, e.g. "30d". */
export const COMPLIANCE_WINDOW = `${SLO_S1.windowDays}d`;

/** A burn tier with the severity its action maps to. */
export interface BurnTier extends BurnTierConfig {
  readonly severity: (typeof SEVERITY)['page' | 'ticket'];
}

const percent = (share: number) => `${Number((share * 100).toPrecision(6))}%`;

export interface SloModel {
  readonly objective: number;
  /** Share of requests allowed to fail: 1 − objective, rounded so 0.999 gives 0.001 exactly. */
  readonly errorBudget: number;
  /** Objective as a percentage for human text ("99.9%"). */
  readonly objectivePercent: string;
  readonly budgetPercent: string;
  readonly burnTiers: readonly BurnTier[];
  /** Every window a burn tier needs, shortest first, each recorded once. */
  readonly rateWindows: readonly string[];
}

export function sloModel(config: MonitoringConfig): SloModel {
  const errorBudget = Number((1 - config.slo.objective).toPrecision(6));
  const windows = [...new Set(config.slo.burnTiers.flatMap((tier) => [tier.short, tier.long]))];
  return {
    objective: config.slo.objective,
    errorBudget,
    objectivePercent: percent(config.slo.objective),
    budgetPercent: percent(errorBudget),
    burnTiers: config.slo.burnTiers.map((tier) => ({ ...tier, severity: SEVERITY[tier.action] })),
    rateWindows: windows.sort((a, b) => durationSeconds(a) - durationSeconds(b)),
  };
}

/** Names of the recorded series: `level:metric:operations` as in the Prometheus naming guide. */
export const RECORDED = {
  requestsRate: (window: string) => `holdfast:slo_requests:rate${window}`,
  errorsRate: (window: string) => `holdfast:slo_errors:rate${window}`,
  errorRatio: (window: string) => `holdfast:slo_errors:ratio_rate${window}`,
  requestsIncrease: `holdfast:slo_requests:increase${COMPLIANCE_WINDOW}`,
  errorsIncrease: `holdfast:slo_errors:increase${COMPLIANCE_WINDOW}`,
  errorRatioCompliance: `holdfast:slo_errors:ratio_increase${COMPLIANCE_WINDOW}`,
  /** 1 − objective as a series, so readers (the console) divide by the configured budget, not a copy of it. */
  errorBudget: 'holdfast:slo_error_budget:ratio',
} as const;

/** Days until the budget is gone at a burn factor, for alert text. */
export function daysToExhaustion(factor: number): string {
  const days = SLO_S1.windowDays / factor;
  return Number.isInteger(days) ? `${days} days` : `about ${days.toFixed(1)} days`;
}
