/**
 * Every PromQL expression Holdfast ships — generated rules and dashboards as
 * committed, runbook snippets, promtool test inputs — may only use metrics,
 * labels and label values that contract/metric-table.ts defines (or that the
 * rules record, or that Prometheus synthesises). Expressions are parsed and
 * label sets inferred; a renamed metric or label fails here, not in the pager.
 */
import { describe, expect, it } from 'vitest';
import { METRIC_SPECS } from '../../contract/metric-table.js';
import { analyse, type Catalog } from './promql/check.js';
import { addRules, tableCatalog } from './promql/catalog.js';
import { parse } from './promql/parser.js';
import {
  dashboardExprs,
  dashboards,
  panelsOf,
  promtoolExprs,
  rules,
  runbookExprs,
  variableQueries,
  type SourceExpr,
} from './sources.js';

function catalogWithRules(): { catalog: Catalog; issues: string[] } {
  const catalog = tableCatalog();
  const issues = addRules(catalog, rules());
  return { catalog, issues };
}

/** All problems of a list of expressions, as "where: problem" lines (empty when all is well). */
function problems(sources: readonly SourceExpr[], catalog: Catalog): string[] {
  return sources.flatMap(({ where, expr }) => {
    try {
      return analyse(parse(expr), catalog).issues.map((issue) => `${where}: ${issue}`);
    } catch (error) {
      return [`${where}: ${(error as Error).message}`];
    }
  });
}

describe('PromQL references against the metric table', () => {
  const { catalog, issues } = catalogWithRules();

  it('recording rules infer label sets without problems', () => {
    expect(issues).toEqual([]);
    expect(catalog.has('holdfast:slo_errors:ratio_rate5m')).toBe(true);
  });

  it('every rule expression uses only known metrics, labels and values', () => {
    const sources = rules().map((rule) => ({ where: rule.where, expr: rule.expr }));
    expect(sources.length).toBeGreaterThan(10);
    expect(problems(sources, catalog)).toEqual([]);
  });

  it('every dashboard query uses only known metrics, labels and values', () => {
    const sources = dashboardExprs();
    expect(sources.length).toBeGreaterThan(10);
    expect(problems(sources, catalog)).toEqual([]);
  });

  it('every dashboard variable query reads a known metric and one of its labels', () => {
    const found: string[] = [];
    for (const { where, expr } of variableQueries()) {
      const call = parse(expr);
      const [metric, label] = call.kind === 'call' && call.func === 'label_values' ? call.args : [];
      if (!metric || label?.kind !== 'selector' || label.name === undefined) {
        found.push(`${where}: not label_values(<selector>, <label>)`);
        continue;
      }
      const analysis = analyse(metric, catalog);
      found.push(...analysis.issues.map((issue) => `${where}: ${issue}`));
      if (analysis.value.type === 'vector' && !analysis.value.labels.has(label.name)) {
        found.push(`${where}: label "${label.name}" is not on ${expr}`);
      }
    }
    expect(variableQueries().length).toBeGreaterThan(0);
    expect(found).toEqual([]);
  });

  it('every PromQL snippet in the runbooks uses only known metrics, labels and values', () => {
    const sources = runbookExprs();
    expect(sources.length).toBeGreaterThan(10);
    expect(problems(sources, catalog)).toEqual([]);
  });

  it('every promtool test input series and expression uses only known metrics, labels and values', () => {
    const sources = promtoolExprs();
    expect(sources.length).toBeGreaterThan(10);
    expect(problems(sources, catalog)).toEqual([]);
  });

  it('every server metric of the table appears on a dashboard', () => {
    const used = new Set(
      dashboards().flatMap(({ dashboard }) =>
        panelsOf(dashboard).flatMap((panel) =>
          (panel.targets ?? []).flatMap((target) => analyse(parse(target.expr ?? ''), catalog).references.map((r) => r.metric)),
        ),
      ),
    );
    const missing = METRIC_SPECS.filter((spec) => spec.emitter === 'server')
      .filter((spec) => ![spec.name, `${spec.name}_count`, `${spec.name}_bucket`].some((name) => used.has(name)))
      .map((spec) => spec.name);
    expect(missing).toEqual([]);
  });
});
