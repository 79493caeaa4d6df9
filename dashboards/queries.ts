/**
 * PromQL used by the dashboards, built from the metric table and the recorded
 * SLO series, filtered by the dashboard variables.
 */
import { METRICS, STORE_OUTCOMES, type MetricSpec } from '../contract/metric-table.js';
import { selector, type HistogramSeries, type MatchValue } from '../alerts/promql.js';
import { ERROR_BUDGET, RECORDED } from '../alerts/slo.js';
import { FILTER, RATE_INTERVAL } from './panels.js';

/** Server metric filtered by the `backend` and `instance` variables. */
export function server(spec: MetricSpec, series?: HistogramSeries, match?: Record<string, MatchValue>): string {
  return selector(spec, { series, match, raw: [FILTER.backend, FILTER.instance] });
}

/** SDK metrics come from client processes, so only the backend filter applies. */
export function sdk(spec: MetricSpec): string {
  return selector(spec, { raw: [FILTER.backend] });
}

/** A recorded SLO series (aggregated over instances) filtered by backend. */
export function recorded(name: string): string {
  return `${name}{${FILTER.backend}}`;
}

export function rateOf(seriesSelector: string): string {
  return `rate(${seriesSelector}[${RATE_INTERVAL}])`;
}

export function increaseOf(seriesSelector: string): string {
  return `increase(${seriesSelector}[${RATE_INTERVAL}])`;
}

export function quantile(q: number, spec: MetricSpec, by: readonly string[] = []): string {
  const labels = [...by, 'le'].join(', ');
  return `histogram_quantile(${q}, sum by (${labels}) (${rateOf(server(spec, 'bucket'))}))`;
}

/** Error budget left in the compliance window: 1 − (error ratio ÷ budget). Negative when overspent. */
export const BUDGET_REMAINING = `1 - ${recorded(RECORDED.errorRatioCompliance)} / ${ERROR_BUDGET}`;

/** Availability over the compliance window, from `increase` over the whole window. */
export const AVAILABILITY = `1 - ${recorded(RECORDED.errorRatioCompliance)}`;

/** Burn rate over a window: error ratio as a multiple of the budget rate. */
export function burnRate(window: string): string {
  return `${recorded(RECORDED.errorRatio(window))} / ${ERROR_BUDGET}`;
}

export const STORE_BAD_OUTCOMES = STORE_OUTCOMES.filter((outcome) => outcome !== 'ok');

export { METRICS };
