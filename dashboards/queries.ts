/**
 * PromQL used by the dashboards, built from the metric table and the recorded
 * SLO series, filtered by the configured job matchers and the dashboard variables.
 */
import { METRICS, STORE_OUTCOMES, type MetricSpec } from '../contract/metric-table.js';
import type { MonitoringConfig } from '../alerts/config.js';
import { selector, type HistogramSeries, type MatchValue } from '../alerts/promql.js';
import { RECORDED, sloModel } from '../alerts/slo.js';
import { FILTER, RATE_INTERVAL } from './panels.js';

export function rateOf(seriesSelector: string): string {
  return `rate(${seriesSelector}[${RATE_INTERVAL}])`;
}

export function increaseOf(seriesSelector: string): string {
  return `increase(${seriesSelector}[${RATE_INTERVAL}])`;
}

export interface DashboardQueries {
  /** A recorded SLO series (aggregated over instances) filtered by backend (and cluster). */
  recorded(name: string): string;
  /** The fleet variable (the configured cluster label), when there is one. */
  readonly clusterVariable?: { name: string; selector: string };
  /** Server metric of the Holdfast job(s), filtered by the `backend` and `instance` variables. */
  server(spec: MetricSpec, series?: HistogramSeries, match?: Record<string, MatchValue>): string;
  /** A build-info metric (no `backend` label) of the Holdfast job(s), filtered by instance. */
  info(spec: MetricSpec): string;
  /** SDK metrics come from client processes (other jobs), so only the backend filter applies. */
  sdk(spec: MetricSpec): string;
  quantile(q: number, spec: MetricSpec, by?: readonly string[]): string;
  /** `up` of the Holdfast job(s), filtered by instance. */
  readonly up: string;
  /** Error budget left in the compliance window: 1 − (error ratio ÷ budget). Negative when overspent. */
  readonly budgetRemaining: string;
  /** Availability over the compliance window, from `increase` over the whole window. */
  readonly availability: string;
  /** Burn rate over a window: error ratio as a multiple of the budget rate. */
  burnRate(window: string): string;
}

export function dashboardQueries(config: MonitoringConfig): DashboardQueries {
  const budget = sloModel(config).errorBudget;
  // A configured cluster label becomes a dashboard variable of the same name, filtering every query.
  const cluster = config.clusterLabel ? [`${config.clusterLabel}=~"$${config.clusterLabel}"`] : [];
  // Families split by policy follow the dashboard's policy variable too.
  const server = (spec: MetricSpec, series?: HistogramSeries, match?: Record<string, MatchValue>) =>
    selector(spec, {
      series,
      match,
      raw: [config.jobSelector, ...cluster, FILTER.backend, FILTER.instance, ...(spec.policyLabels?.includes('policy') ? [FILTER.policy] : [])],
    });
  const recorded = (name: string) => `${name}{${[...cluster, FILTER.backend].join(', ')}}`;
  return {
    recorded,
    ...(config.clusterLabel
      ? { clusterVariable: { name: config.clusterLabel, selector: `${METRICS.lockHeld.name}{${config.jobSelector}}` } }
      : {}),
    server,
    info: (spec) => selector(spec, { raw: [config.jobSelector, ...cluster, FILTER.instance] }),
    sdk: (spec) => selector(spec, { raw: [...cluster, FILTER.backend] }),
    quantile(q, spec, by = []) {
      const labels = [...by, 'le'].join(', ');
      return `histogram_quantile(${q}, sum by (${labels}) (${rateOf(server(spec, 'bucket'))}))`;
    },
    up: `up{${[config.jobSelector, ...cluster, FILTER.instance].join(', ')}}`,
    budgetRemaining: `1 - ${recorded(RECORDED.errorRatioCompliance)} / ${budget}`,
    availability: `1 - ${recorded(RECORDED.errorRatioCompliance)}`,
    burnRate: (window) => `${recorded(RECORDED.errorRatio(window))} / ${budget}`,
  };
}

export const STORE_BAD_OUTCOMES = STORE_OUTCOMES.filter((outcome) => outcome !== 'ok');

export { METRICS };
