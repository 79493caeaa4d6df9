/**
 * The catalog of series an expression may reference: every metric of
 * contract/metric-table.ts (histograms as _bucket/_count/_sum), the series
 * Prometheus itself synthesises (`up`, `ALERTS`), and the series the rule
 * files record, with label sets inferred from their expressions.
 */
import { METRIC_SPECS } from '../../../contract/metric-table.js';
import { analyse, type Catalog, type SeriesInfo } from './check.js';
import { parse } from './parser.js';

/** Labels Prometheus attaches to every scraped series. */
export const TARGET_LABELS = ['job', 'instance'] as const;

export interface RuleLike {
  readonly record?: string;
  readonly alert?: string;
  readonly expr: string;
  readonly labels?: Record<string, string>;
}

function info(labels: Iterable<string>, values: Map<string, ReadonlySet<string>>, counter: boolean, origin: string): SeriesInfo {
  return { labels: new Set(labels), values, counter, origin };
}

/** Series of the metric table plus `up`. */
export function tableCatalog(): Catalog {
  const catalog: Catalog = new Map();
  for (const spec of METRIC_SPECS) {
    const labels = [...Object.keys(spec.labels), ...TARGET_LABELS];
    // A policy label's values are the operator's policies file, not a closed set of the table.
    const closed = Object.entries(spec.labels).filter(([label]) => !spec.policyLabels?.includes(label));
    const values = new Map(closed.map(([label, set]) => [label, new Set<string>(set)]));
    const origin = `metric table: ${spec.name}`;
    if (spec.type === 'histogram') {
      catalog.set(`${spec.name}_bucket`, info([...labels, 'le'], values, true, origin));
      catalog.set(`${spec.name}_count`, info(labels, values, true, origin));
      catalog.set(`${spec.name}_sum`, info(labels, values, true, origin));
    } else {
      catalog.set(spec.name, info(labels, values, spec.type === 'counter', origin));
    }
  }
  catalog.set('up', info(TARGET_LABELS, new Map(), false, 'prometheus: scrape health'));
  return catalog;
}

/** Several rules recording one name (e.g. per `route`): union of labels; a value set stays closed only if closed in every rule. */
function merge(existing: SeriesInfo | undefined, next: SeriesInfo): SeriesInfo {
  if (!existing) return next;
  const labels = new Set([...existing.labels, ...next.labels]);
  const values = new Map<string, ReadonlySet<string>>();
  for (const label of labels) {
    const sets = [existing, next].filter((s) => s.labels.has(label)).map((s) => s.values.get(label));
    if (sets.every((set) => set !== undefined)) values.set(label, new Set(sets.flatMap((set) => [...set!])));
  }
  return info(labels, values, false, existing.origin);
}

/**
 * Adds recorded series (in file order, as Prometheus evaluates them) and
 * `ALERTS`/`ALERTS_FOR_STATE` with the labels the alerting rules produce.
 * Returns issues found while inferring recorded label sets.
 */
export function addRules(catalog: Catalog, rules: readonly RuleLike[]): string[] {
  const issues: string[] = [];
  const alertLabels = new Set<string>(['alertname', 'alertstate']);
  const alertValues = new Map<string, Set<string>>([
    ['alertname', new Set()],
    ['alertstate', new Set(['pending', 'firing'])],
  ]);
  for (const rule of rules) {
    const analysis = analyse(parse(rule.expr), catalog);
    const value = analysis.value;
    const labels = value.type === 'vector' ? [...value.labels] : [];
    const values = new Map(value.type === 'vector' ? value.values : []);
    for (const [label, v] of Object.entries(rule.labels ?? {})) values.set(label, new Set([v]));
    const all = [...labels, ...Object.keys(rule.labels ?? {})];
    if (rule.record) {
      if (value.type !== 'vector') issues.push(`record ${rule.record}: expression is not an instant vector`);
      catalog.set(rule.record, merge(catalog.get(rule.record), info(all, values, false, `recording rule ${rule.record}`)));
    }
    if (rule.alert) {
      alertValues.get('alertname')!.add(rule.alert);
      for (const label of all) alertLabels.add(label);
      // Static labels (severity, windows) keep closed sets; labels from the expression stay open.
      for (const [label, v] of Object.entries(rule.labels ?? {})) {
        alertValues.set(label, new Set([...(alertValues.get(label) ?? []), v]));
      }
    }
  }
  const alerts = info(alertLabels, alertValues, false, 'prometheus: alert state');
  catalog.set('ALERTS', alerts);
  catalog.set('ALERTS_FOR_STATE', alerts);
  return issues;
}
