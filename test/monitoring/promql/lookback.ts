/**
 * How long an expression can keep seeing an event after it ended ("lookback"): the range windows
 * its selectors read, through recorded series to the raw ones. After a store outage, an alert can
 * only fire while its expression still holds, and its expression only holds while some window
 * still holds outage samples: the lookback bounds how long a symptom can outlive its root cause.
 *
 * `a and b` holds only while both do, so it takes the shorter; `a unless b` takes `a`'s; every
 * other operator and function takes the longest of its operands. Instant selectors of raw series
 * (gauges) add nothing: they show the present.
 */
import { durationSeconds } from '../../../alerts/config.js';
import { parse, type Node } from './parser.js';

/** Recorded series name → the expressions recording it (several rules may record one name). */
export type Recorded = ReadonlyMap<string, readonly string[]>;

export function recordedSeries(rules: readonly { record?: string; expr: string }[]): Map<string, string[]> {
  const recorded = new Map<string, string[]>();
  for (const rule of rules) if (rule.record) recorded.set(rule.record, [...(recorded.get(rule.record) ?? []), rule.expr]);
  return recorded;
}

/** Lookback of a PromQL expression, in seconds. */
export function lookbackSeconds(expr: string, recorded: Recorded): number {
  return lookback(parse(expr), recorded, new Set());
}

function lookback(node: Node, recorded: Recorded, visiting: ReadonlySet<string>): number {
  const of = (child: Node) => lookback(child, recorded, visiting);
  switch (node.kind) {
    case 'number':
    case 'string':
      return 0;
    case 'selector': {
      const own = (node.range ? durationSeconds(node.range) : 0) + (node.offset ? durationSeconds(node.offset) : 0);
      const sources = node.name !== undefined ? recorded.get(node.name) : undefined;
      if (!sources || !node.name) return own;
      if (visiting.has(node.name)) throw new Error(`recording rules loop through ${node.name}`);
      const inner = new Set([...visiting, node.name]);
      return own + Math.max(...sources.map((source) => lookback(parse(source), recorded, inner)));
    }
    case 'subquery':
      return durationSeconds(node.range) + of(node.expr);
    case 'call':
      return Math.max(0, ...node.args.map(of));
    case 'aggregation':
    case 'unary':
    case 'paren':
      return of(node.expr);
    case 'binary':
      if (node.op === 'and') return Math.min(of(node.lhs), of(node.rhs));
      if (node.op === 'unless') return of(node.lhs);
      return Math.max(of(node.lhs), of(node.rhs));
  }
}
