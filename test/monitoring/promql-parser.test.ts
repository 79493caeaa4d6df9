/**
 * The PromQL parser and label checker that the reference test relies on:
 * each case pins a behaviour that, if broken, would let a bad reference pass.
 */
import { describe, expect, it } from 'vitest';
import { analyse, type Catalog } from './promql/check.js';
import { addRules, tableCatalog } from './promql/catalog.js';
import { PromQLSyntaxError } from './promql/lexer.js';
import { parse, walk, type Node } from './promql/parser.js';

function issuesOf(expr: string, catalog: Catalog = tableCatalog()): string[] {
  return analyse(parse(expr), catalog).issues;
}

function selectors(expr: string): { name?: string; matchers: string[]; range?: string }[] {
  return [...walk(parse(expr))]
    .filter((n): n is Extract<Node, { kind: 'selector' }> => n.kind === 'selector')
    .map((n) => ({ name: n.name, matchers: n.matchers.map((m) => `${m.label}${m.op}${m.value}`), ...(n.range ? { range: n.range } : {}) }));
}

describe('PromQL parser', () => {
  it('extracts selectors, matchers, ranges and Grafana variables', () => {
    expect(
      selectors('sum by (outcome) (rate(lock_acquire_seconds_count{backend=~"$backend", outcome!="granted"}[$__rate_interval]))'),
    ).toEqual([
      { name: 'lock_acquire_seconds_count', matchers: ['backend=~$backend', 'outcome!=granted'], range: '$__rate_interval' },
    ]);
  });

  it('reads by/without before or after the aggregated expression', () => {
    const before = parse('sum by (backend) (lock_held)');
    const after = parse('sum(lock_held) without (instance, job)');
    expect(before).toMatchObject({ kind: 'aggregation', op: 'sum', without: false, grouping: ['backend'] });
    expect(after).toMatchObject({ kind: 'aggregation', op: 'sum', without: true, grouping: ['instance', 'job'] });
  });

  it('honours precedence: and binds looser than comparison, * tighter than +', () => {
    const tree = parse('a > 1 and b > 2 or c + d * 2');
    expect(tree).toMatchObject({ kind: 'binary', op: 'or', lhs: { op: 'and', lhs: { op: '>' }, rhs: { op: '>' } }, rhs: { op: '+', rhs: { op: '*' } } });
  });

  it('parses vector matching modifiers and bool', () => {
    expect(parse('a / on (backend) group_left (instance) b')).toMatchObject({
      op: '/',
      matching: { on: true, labels: ['backend'], group: 'left', include: ['instance'] },
    });
    expect(parse('a > bool ignoring (le) b')).toMatchObject({ bool: true, matching: { on: false, labels: ['le'] } });
  });

  it('parses a histogram quantile with a nested aggregation and unescapes strings', () => {
    const tree = parse('histogram_quantile(0.99, sum by (le) (rate(x_bucket{a="q\\"uote"}[5m])))');
    expect(tree).toMatchObject({ kind: 'call', func: 'histogram_quantile', args: [{ kind: 'number', value: 0.99 }, { kind: 'aggregation' }] });
    expect(selectors('x{a="q\\"uote"}')[0]!.matchers).toEqual(['a=q"uote']);
  });

  it('skips comments and accepts subqueries and offsets', () => {
    expect(selectors('# how many\nmax_over_time(lock_held[1h:1m]) offset 5m')).toEqual([{ name: 'lock_held', matchers: [] }]);
  });

  it('rejects malformed expressions with a position', () => {
    expect(() => parse('sum by (backend (lock_held)')).toThrow(PromQLSyntaxError);
    expect(() => parse('rate(lock_held[5m]')).toThrow(/expected/);
    expect(() => parse('lock_held{backend="etcd"')).toThrow(PromQLSyntaxError);
  });
});

describe('PromQL label check against the metric table', () => {
  it('accepts a correct expression', () => {
    expect(issuesOf('sum by (backend, outcome) (rate(lock_acquire_seconds_count{outcome=~"not_leader|error"}[5m]))')).toEqual([]);
  });

  it('flags an unknown metric and the histogram base name', () => {
    expect(issuesOf('rate(lock_renewals_total[5m])')).toEqual(['unknown metric "lock_renewals_total"']);
    expect(issuesOf('rate(lock_acquire_seconds[5m])')).toContain('unknown metric "lock_acquire_seconds"');
  });

  it('flags a label the metric does not have and a value outside the closed set', () => {
    expect(issuesOf('lock_held{outcome="granted"}')[0]).toMatch(/no label "outcome"/);
    expect(issuesOf('lock_release_total{outcome="not_leader"}')[0]).toMatch(/"not_leader" is not one of/);
    expect(issuesOf('lock_release_total{outcome=~"error|oops"}')[0]).toMatch(/"oops" is not one of/);
  });

  it('flags by/without labels that the input no longer carries', () => {
    expect(issuesOf('sum by (outcome) (lock_held)')[0]).toMatch(/label "outcome" is not on the input/);
    expect(issuesOf('sum by (outcome) (sum by (backend) (lock_renew_total))')[0]).toMatch(/"outcome"/);
  });

  it('flags rate() over a gauge and histogram_quantile without le', () => {
    expect(issuesOf('rate(lock_waiters[5m])')[0]).toMatch(/not a counter/);
    expect(issuesOf('histogram_quantile(0.9, sum by (backend) (rate(lock_store_seconds_bucket[5m])))')[0]).toMatch(/no "le"/);
  });

  it('flags one-to-one matches between different label sets', () => {
    expect(issuesOf('sum by (backend) (lock_held) / sum by (backend, instance) (lock_waiters)')[0]).toMatch(/never matches/);
    expect(issuesOf('sum by (backend) (lock_held) / on (backend) sum by (backend, instance) (lock_waiters)')).toEqual([]);
  });

  it('knows recorded series, their static labels and ALERTS', () => {
    const catalog = tableCatalog();
    const issues = addRules(catalog, [
      { record: 'holdfast:x:rate5m', expr: 'sum by (backend) (rate(lock_renew_total[5m]))', labels: { route: 'renew' } },
      { alert: 'HoldfastX', expr: 'holdfast:x:rate5m > 1', labels: { severity: 'warning' } },
    ]);
    expect(issues).toEqual([]);
    expect(issuesOf('holdfast:x:rate5m{route="renew", backend="etcd"}', catalog)).toEqual([]);
    expect(issuesOf('holdfast:x:rate5m{route="acquire"}', catalog)[0]).toMatch(/"acquire" is not one of/);
    expect(issuesOf('sum by (outcome) (holdfast:x:rate5m)', catalog)[0]).toMatch(/"outcome"/);
    expect(issuesOf('ALERTS{alertname="HoldfastX", severity="warning", backend="etcd"}', catalog)).toEqual([]);
    expect(issuesOf('ALERTS{alertname="HoldfastY"}', catalog)[0]).toMatch(/"HoldfastY" is not one of/);
  });
});
