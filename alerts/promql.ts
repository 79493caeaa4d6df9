/**
 * Small PromQL string builders that take metric specs from the metric table,
 * never hand-typed names. They validate label names and values against the
 * table's closed sets at generation time, so a typo fails `npm run gen`.
 */
import type { MetricSpec } from '../contract/metric-table.js';

/** Series a histogram exposes; counters and gauges are used by their table name. */
export type HistogramSeries = 'bucket' | 'count' | 'sum';

/** A label matcher value: one value (`=`) or several (`=~"a|b"`). */
export type MatchValue = string | readonly string[];

export interface SelectorOptions {
  /** Required for histograms: which of `_bucket`, `_count`, `_sum`. */
  readonly series?: HistogramSeries;
  /** Matchers on the metric's own labels, checked against the closed value sets. */
  readonly match?: Readonly<Record<string, MatchValue>>;
  /**
   * Matchers written verbatim, for labels outside the table (Prometheus target
   * labels `job`/`instance`) or Grafana variables (`backend=~"$backend"`).
   */
  readonly raw?: readonly string[];
}

export function seriesName(spec: MetricSpec, series?: HistogramSeries): string {
  if (spec.type === 'histogram') {
    if (!series) throw new Error(`${spec.name} is a histogram: say which series (_bucket/_count/_sum)`);
    return `${spec.name}_${series}`;
  }
  if (series) throw new Error(`${spec.name} is a ${spec.type}: it has no _${series} series`);
  return spec.name;
}

function matcher(spec: MetricSpec, label: string, value: MatchValue): string {
  const allowed = spec.labels[label];
  if (!allowed) throw new Error(`${spec.name} has no label "${label}"`);
  const values = typeof value === 'string' ? [value] : value;
  if (values.length === 0) throw new Error(`${spec.name}{${label}}: empty value list`);
  for (const v of values) {
    if (!allowed.includes(v)) throw new Error(`${spec.name}{${label}="${v}"}: not in [${allowed.join(', ')}]`);
  }
  return values.length === 1 ? `${label}="${values[0]}"` : `${label}=~"${values.join('|')}"`;
}

/** `name{matchers}` for a metric of the table. */
export function selector(spec: MetricSpec, options: SelectorOptions = {}): string {
  const matchers = [
    ...Object.entries(options.match ?? {}).map(([label, value]) => matcher(spec, label, value)),
    ...(options.raw ?? []),
  ];
  const name = seriesName(spec, options.series);
  return matchers.length === 0 ? name : `${name}{${matchers.join(', ')}}`;
}

/** Values of a closed label set that also belong to `wanted` (e.g. the SLO's bad outcomes). */
export function valuesIn(spec: MetricSpec, label: string, wanted: readonly string[]): string[] {
  const allowed = spec.labels[label];
  if (!allowed) throw new Error(`${spec.name} has no label "${label}"`);
  return allowed.filter((value) => wanted.includes(value));
}

/** Checks that every metric in `specs` carries `label` (for `by (label)` clauses). */
export function requireLabel(label: string, ...specs: MetricSpec[]): string {
  for (const spec of specs) {
    if (!spec.labels[label]) throw new Error(`${spec.name} has no label "${label}" to aggregate by`);
  }
  return label;
}

/** Prometheus duration for a whole number of seconds, largest units first: 122 → `2m2s`, 2100 → `35m`. */
export function promDuration(seconds: number): string {
  if (!Number.isInteger(seconds) || seconds < 0) throw new Error(`not a whole number of seconds: ${seconds}`);
  if (seconds === 0) return '0s';
  const units: [string, number][] = [['d', 86_400], ['h', 3_600], ['m', 60], ['s', 1]];
  let rest = seconds;
  let text = '';
  for (const [suffix, size] of units) {
    if (rest >= size) {
      text += `${Math.floor(rest / size)}${suffix}`;
      rest %= size;
    }
  }
  return text;
}
