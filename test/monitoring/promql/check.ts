/**
 * Label-aware reference check of a parsed PromQL expression against a
 * catalog of known series (metric table, recording rules, Prometheus's own
 * series). It infers the label set of every sub-expression, so it catches not
 * just unknown metric names but `by (label)` on a label the input does not
 * carry, matchers with values outside a closed set, one-to-one matches between
 * different label sets, `rate()` over a gauge and `histogram_quantile` without `le`.
 */
import { SET_OPERATORS, type Matcher, type Node } from './parser.js';

export interface SeriesInfo {
  readonly labels: ReadonlySet<string>;
  /** Closed value sets, for the labels that have one. */
  readonly values: ReadonlyMap<string, ReadonlySet<string>>;
  /** Counter-like (counter, histogram _bucket/_count/_sum): `rate()` and `increase()` apply. */
  readonly counter: boolean;
  /** Where the series comes from, for messages. */
  readonly origin: string;
}

export type Catalog = Map<string, SeriesInfo>;

export type Value =
  | { type: 'scalar' }
  | { type: 'string'; value: string }
  | {
      type: 'vector' | 'matrix';
      labels: Set<string>;
      values: Map<string, ReadonlySet<string>>;
      counter: boolean;
      /** For `absent()`: labels fixed by equality matchers of a plain selector. */
      equality?: Map<string, string>;
    };

type Vec = Extract<Value, { type: 'vector' | 'matrix' }>;

export interface Reference {
  readonly metric: string;
  readonly matchers: readonly Matcher[];
}

export interface Analysis {
  readonly value: Value;
  readonly issues: string[];
  readonly references: Reference[];
  /** Range functions applied in the expression with their window (for lints). */
  readonly ranges: { func: string; range: string }[];
}

const COUNTER_RANGE_FUNCS = new Set(['rate', 'irate', 'increase']);
const RANGE_FUNCS = new Set([
  'delta', 'idelta', 'deriv', 'changes', 'resets', 'avg_over_time', 'min_over_time', 'max_over_time',
  'sum_over_time', 'count_over_time', 'stddev_over_time', 'stdvar_over_time', 'last_over_time',
  'present_over_time', 'mad_over_time',
]);
const ELEMENTWISE_FUNCS = new Set([
  'abs', 'ceil', 'floor', 'round', 'exp', 'ln', 'log2', 'log10', 'sqrt', 'sgn', 'clamp', 'clamp_min',
  'clamp_max', 'sort', 'sort_desc', 'timestamp', 'day_of_month', 'day_of_week', 'day_of_year',
  'days_in_month', 'hour', 'minute', 'month', 'year',
]);
const PLAIN_VALUE = /^[A-Za-z0-9_]+(?:\|[A-Za-z0-9_]+)*$/;

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((x) => b.has(x));
}
const show = (labels: Iterable<string>) => `{${[...labels].sort().join(', ')}}`;

export function analyse(root: Node, catalog: Catalog): Analysis {
  const issues: string[] = [];
  const references: Reference[] = [];
  const ranges: { func: string; range: string }[] = [];

  const vector = (labels: Iterable<string>, values: Map<string, ReadonlySet<string>>, counter = false): Vec => {
    const set = new Set(labels);
    return { type: 'vector', labels: set, values: new Map([...values].filter(([l]) => set.has(l))), counter };
  };
  const requireLabels = (labels: readonly string[], input: Vec, context: string) => {
    for (const label of labels) {
      if (!input.labels.has(label)) issues.push(`${context}: label "${label}" is not on the input ${show(input.labels)}`);
    }
  };
  const asVector = (value: Value, context: string): Vec | undefined => {
    if (value.type === 'vector') return value;
    issues.push(`${context}: expected an instant vector, got ${value.type}`);
    return undefined;
  };
  const asMatrix = (value: Value, context: string): Vec | undefined => {
    if (value.type === 'matrix') return value;
    issues.push(`${context}: expected a range vector, got ${value.type}`);
    return undefined;
  };

  function selector(node: Extract<Node, { kind: 'selector' }>): Value {
    const name = node.name ?? node.matchers.find((m) => m.label === '__name__' && m.op === '=')?.value;
    const context = name ?? '{…}';
    const info = name === undefined ? undefined : catalog.get(name);
    if (name === undefined) issues.push('selector without a fixed metric name');
    else {
      references.push({ metric: name, matchers: node.matchers });
      if (!info) issues.push(`unknown metric "${name}"`);
    }
    const equality = new Map<string, string>();
    for (const m of node.matchers) {
      if (m.label === '__name__') continue;
      if (m.op === '=') equality.set(m.label, m.value);
      if (!info) continue;
      if (!info.labels.has(m.label)) {
        issues.push(`${context}: no label "${m.label}" (has ${show(info.labels)})`);
        continue;
      }
      const closed = info.values.get(m.label);
      if (!closed || m.value.includes('$')) continue;
      const regex = m.op === '=~' || m.op === '!~';
      if (regex && !PLAIN_VALUE.test(m.value)) continue;
      for (const v of regex ? m.value.split('|') : [m.value]) {
        if (!closed.has(v)) issues.push(`${context}{${m.label}${m.op}"${m.value}"}: "${v}" is not one of ${show(closed)}`);
      }
    }
    const labels = info ? info.labels : new Set<string>();
    // An unknown metric is reported once; treating it as a counter avoids a cascade of follow-up issues.
    const base = vector(labels, new Map(info?.values ?? []), info?.counter ?? true);
    const withEquality = { ...base, equality };
    return node.range ? { ...withEquality, type: 'matrix' } : withEquality;
  }

  function call(node: Extract<Node, { kind: 'call' }>): Value {
    const f = node.func;
    const args = node.args.map(visit);
    const ctx = `${f}()`;
    const arg = (i: number): Value | undefined => {
      const value = args[i];
      if (!value) issues.push(`${ctx}: missing argument ${i + 1}`);
      return value;
    };
    if (COUNTER_RANGE_FUNCS.has(f) || RANGE_FUNCS.has(f) || f === 'quantile_over_time' || f === 'predict_linear') {
      const index = f === 'quantile_over_time' ? 1 : 0;
      const input = node.args[index];
      const value = arg(index);
      const matrix = value && asMatrix(value, ctx);
      if (input?.kind === 'selector' && input.range) ranges.push({ func: f, range: input.range });
      if (!matrix) return vector([], new Map());
      if (COUNTER_RANGE_FUNCS.has(f) && !matrix.counter) {
        issues.push(`${ctx} applied to a series that is not a counter (${input?.kind === 'selector' ? input.name : 'subquery'})`);
      }
      return vector(matrix.labels, matrix.values);
    }
    if (f === 'absent' || f === 'absent_over_time') {
      const value = arg(0);
      const input = value && (f === 'absent' ? asVector(value, ctx) : asMatrix(value, ctx));
      const fixed = input?.equality ?? new Map<string, string>();
      return vector(fixed.keys(), new Map([...fixed].map(([l, v]) => [l, new Set([v])])));
    }
    if (f === 'histogram_quantile') {
      const value = arg(1);
      const input = value && asVector(value, ctx);
      if (!input) return vector([], new Map());
      if (!input.labels.has('le')) issues.push(`${ctx}: input has no "le" label ${show(input.labels)}; aggregate with by (…, le)`);
      return vector([...input.labels].filter((l) => l !== 'le'), input.values);
    }
    if (f === 'label_replace' || f === 'label_join') {
      const value = arg(0);
      const input = value && asVector(value, ctx);
      const strings = args.slice(1).map((a) => (a.type === 'string' ? a.value : undefined));
      if (strings.some((s) => s === undefined)) issues.push(`${ctx}: label arguments must be strings`);
      if (!input) return vector([], new Map());
      const dst = strings[0] ?? '';
      const sources = f === 'label_replace' ? [strings[2] ?? ''] : strings.slice(2).map((s) => s ?? '');
      requireLabels(sources.filter((s) => s !== ''), input, ctx);
      const values = new Map(input.values);
      values.delete(dst);
      return vector([...input.labels, dst], values);
    }
    if (f === 'vector') return vector([], new Map());
    if (f === 'scalar' || f === 'time' || f === 'pi') return { type: 'scalar' };
    if (ELEMENTWISE_FUNCS.has(f)) {
      const value = args[0];
      if (!value) return f === 'timestamp' ? { type: 'scalar' } : vector([], new Map());
      const input = asVector(value, ctx);
      return input ? vector(input.labels, input.values) : vector([], new Map());
    }
    issues.push(`unknown function ${f}()`);
    return vector([], new Map());
  }

  function aggregation(node: Extract<Node, { kind: 'aggregation' }>): Value {
    const ctx = `${node.op}${node.grouping ? ` ${node.without ? 'without' : 'by'} (${node.grouping.join(', ')})` : ''}`;
    const param = node.param ? visit(node.param) : undefined;
    const input = asVector(visit(node.expr), ctx);
    if (!input) return vector([], new Map());
    const grouping = node.grouping ?? [];
    requireLabels(grouping, input, ctx);
    if (['topk', 'bottomk', 'limitk', 'limit_ratio'].includes(node.op)) return vector(input.labels, input.values);
    const kept = node.without ? [...input.labels].filter((l) => !grouping.includes(l)) : grouping;
    const result = vector(kept, input.values);
    if (node.op === 'count_values' && param?.type === 'string') result.labels.add(param.value);
    return result;
  }

  function binary(node: Extract<Node, { kind: 'binary' }>): Value {
    const lhs = visit(node.lhs);
    const rhs = visit(node.rhs);
    const ctx = `"${node.op}"`;
    const isSet = SET_OPERATORS.has(node.op);
    if (lhs.type === 'scalar' && rhs.type === 'scalar') {
      if (isSet) issues.push(`${ctx}: set operators need vectors`);
      return { type: 'scalar' };
    }
    if (lhs.type === 'scalar' || rhs.type === 'scalar') {
      if (isSet) issues.push(`${ctx}: set operators need vectors on both sides`);
      const side = lhs.type === 'scalar' ? rhs : lhs;
      const v = asVector(side, ctx);
      return v ? vector(v.labels, v.values) : vector([], new Map());
    }
    const l = asVector(lhs, `${ctx} left side`);
    const r = asVector(rhs, `${ctx} right side`);
    if (!l || !r) return vector([], new Map());
    const m = node.matching;
    const comparisonFilter = ['==', '!=', '<=', '<', '>=', '>'].includes(node.op) && !node.bool;
    if (m?.on) {
      requireLabels(m.labels, l, `${ctx} on(…) left side`);
      requireLabels(m.labels, r, `${ctx} on(…) right side`);
    } else if (m) {
      for (const label of m.labels) {
        if (!l.labels.has(label) && !r.labels.has(label)) issues.push(`${ctx} ignoring(${label}): on neither side`);
      }
    }
    if (m?.group) requireLabels(m.include, m.group === 'left' ? r : l, `${ctx} group_${m.group}(…)`);
    if (node.op === 'or') return vector([...l.labels, ...r.labels], new Map([...r.values, ...l.values]));
    if (!m) {
      if (!sameSet(l.labels, r.labels)) {
        issues.push(`${ctx}: one-to-one match between different label sets ${show(l.labels)} and ${show(r.labels)} never matches`);
      }
      return vector(l.labels, l.values);
    }
    if (isSet || comparisonFilter) return vector(l.labels, l.values);
    if (m.group === 'left') return vector([...l.labels, ...m.include], new Map([...r.values, ...l.values]));
    if (m.group === 'right') return vector([...r.labels, ...m.include], new Map([...l.values, ...r.values]));
    const kept = m.on ? m.labels : [...l.labels].filter((x) => !m.labels.includes(x));
    return vector(kept, l.values);
  }

  function visit(node: Node): Value {
    switch (node.kind) {
      case 'number':
        return { type: 'scalar' };
      case 'string':
        return { type: 'string', value: node.value };
      case 'selector':
        return selector(node);
      case 'subquery': {
        const inner = asVector(visit(node.expr), 'subquery');
        return inner ? { ...inner, type: 'matrix', counter: false } : vector([], new Map());
      }
      case 'call':
        return call(node);
      case 'aggregation':
        return aggregation(node);
      case 'unary':
      case 'paren': {
        const inner = visit(node.expr);
        return inner.type === 'vector' ? { ...inner, equality: undefined } : inner;
      }
      case 'binary':
        return binary(node);
    }
  }

  const value = visit(root);
  return { value, issues, references, ranges };
}
