/**
 * A lint of the generated rules and dashboards in the style of the
 * monitoring-mixin tools (mixtool lint, kube-prometheus's checks): naming,
 * severities, annotations, fixed dashboard uids, units, descriptions,
 * `$__rate_interval` in dashboard rates.
 */
import { describe, expect, it } from 'vitest';
import { SEVERITIES } from '../../alerts/define-alert.js';
import { analyse } from './promql/check.js';
import { addRules, tableCatalog } from './promql/catalog.js';
import { parse } from './promql/parser.js';
import { alertingRules, dashboards, panelsOf, ruleGroups, rules } from './sources.js';

const DURATION = /^(\d+(ms|[smhdwy]))+$/;

function catalog() {
  const c = tableCatalog();
  addRules(c, rules());
  return c;
}

describe('rule lint', () => {
  it('alert names are CamelCase with the Holdfast prefix', () => {
    const bad = alertingRules().filter((rule) => !/^Holdfast(?:[A-Z][a-z0-9]+)+$/.test(rule.alert!));
    expect(bad.map((rule) => rule.alert)).toEqual([]);
  });

  it('recording rule names follow level:metric:operations with the holdfast level', () => {
    const bad = rules().filter((rule) => rule.record !== undefined && !/^holdfast:[a-z0-9_]+:[a-z0-9_]+$/.test(rule.record));
    expect(bad.map((rule) => rule.record)).toEqual([]);
  });

  it('every alert has a severity from the set critical/warning/info', () => {
    const bad = alertingRules().filter((rule) => !SEVERITIES.includes(rule.labels?.severity as never));
    expect(bad.map((rule) => `${rule.alert}: ${rule.labels?.severity}`)).toEqual([]);
  });

  it('every alert has a one-sentence summary, a templated description and a runbook_url', () => {
    const problems: string[] = [];
    for (const rule of alertingRules()) {
      const a = rule.annotations ?? {};
      if (!a.summary || !/^[A-Z].*\.$/.test(a.summary) || a.summary.includes('{{') || a.summary.split('. ').length > 1) {
        problems.push(`${rule.alert}: summary must be one plain sentence`);
      }
      if (!a.description || !/\{\{[^}]*\$value[^}]*\}\}/.test(a.description)) {
        problems.push(`${rule.alert}: description must show the live value ({{ $value … }})`);
      }
      if (!a.runbook_url || !/^https?:\/\/\S+\.md$/.test(a.runbook_url)) problems.push(`${rule.alert}: runbook_url missing`);
      const extra = Object.keys(a).filter((key) => !['summary', 'description', 'runbook_url'].includes(key));
      if (extra.length > 0) problems.push(`${rule.alert}: unexpected annotations ${extra.join(', ')}`);
    }
    expect(problems).toEqual([]);
  });

  it('every actionable alert waits a `for` duration before firing; only info alerts may fire at once', () => {
    const bad = alertingRules().filter((rule) => rule.labels?.severity !== 'info' && !(rule.for && DURATION.test(rule.for)));
    expect(bad.map((rule) => rule.alert)).toEqual([]);
  });

  it('alerts with one name differ by their static labels, and group names are unique', () => {
    const keys = alertingRules().map((rule) => `${rule.alert}${JSON.stringify(rule.labels)}`);
    expect(new Set(keys).size).toBe(keys.length);
    const groups = ruleGroups().map(({ group }) => group.name);
    expect(new Set(groups).size).toBe(groups.length);
  });

  it('rules use fixed windows (no Grafana variables) and rate only counters', () => {
    const c = catalog();
    const problems = rules().flatMap((rule) => {
      const analysis = analyse(parse(rule.expr), c);
      return [
        ...analysis.ranges.filter((r) => !DURATION.test(r.range)).map((r) => `${rule.where}: ${r.func}[${r.range}]`),
        ...analysis.issues.filter((issue) => issue.includes('not a counter')).map((issue) => `${rule.where}: ${issue}`),
      ];
    });
    expect(problems).toEqual([]);
  });
});

describe('dashboard lint', () => {
  const all = dashboards();

  it('there are the overview and SLO dashboards, each with a fixed, unique uid', () => {
    const uids = all.map(({ dashboard }) => dashboard.uid);
    expect(uids.sort()).toEqual(['holdfast-overview', 'holdfast-slo']);
  });

  it('every dashboard has a Prometheus datasource variable and a backend variable', () => {
    for (const { path, dashboard } of all) {
      const variables = dashboard.templating.list;
      const datasource = variables.find((v) => v.type === 'datasource');
      expect(datasource, path).toMatchObject({ name: 'datasource', query: 'prometheus' });
      expect(variables.map((v) => v.name), path).toContain('backend');
    }
    const overview = all.find(({ dashboard }) => dashboard.uid === 'holdfast-overview')!.dashboard;
    expect(overview.templating.list.map((v) => v.name)).toContain('instance');
  });

  it('every panel has a unique id, a unit, thresholds and a description of what to do', () => {
    const problems: string[] = [];
    for (const { path, dashboard } of all) {
      const panels = panelsOf(dashboard);
      const ids = panels.map((panel) => panel.id);
      if (new Set(ids).size !== ids.length || ids.some((id) => id === undefined)) problems.push(`${path}: panel ids not unique`);
      for (const panel of panels) {
        const where = `${path} › ${panel.title}`;
        if (!panel.fieldConfig?.defaults?.unit) problems.push(`${where}: no unit`);
        if (!panel.fieldConfig?.defaults?.thresholds?.steps?.length) problems.push(`${where}: no thresholds`);
        // "What it shows and what to do": at least two sentences.
        if ((panel.description ?? '').split(/[.:]\s/).length < 2 || (panel.description ?? '').length < 80) {
          problems.push(`${where}: description too short`);
        }
        if (!panel.targets?.length) problems.push(`${where}: no query`);
        for (const target of panel.targets ?? []) {
          if (target.datasource?.uid !== '${datasource}') problems.push(`${where}: target not bound to $datasource`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('every rate/increase in a dashboard uses $__rate_interval', () => {
    const c = catalog();
    const problems = all.flatMap(({ path, dashboard }) =>
      panelsOf(dashboard).flatMap((panel) =>
        (panel.targets ?? []).flatMap((target) =>
          analyse(parse(target.expr ?? ''), c)
            .ranges.filter((r) => ['rate', 'irate', 'increase'].includes(r.func) && r.range !== '$__rate_interval')
            .map((r) => `${path} › ${panel.title}: ${r.func}[${r.range}]`),
        ),
      ),
    );
    expect(problems).toEqual([]);
  });

  it('raw-metric queries filter by the backend variable', () => {
    const problems = all.flatMap(({ path, dashboard }) =>
      panelsOf(dashboard).flatMap((panel) =>
        (panel.targets ?? [])
          .filter((target) => /\block_/.test(target.expr ?? '') && !(target.expr ?? '').includes('backend=~"$backend"'))
          .map(() => `${path} › ${panel.title}`),
      ),
    );
    expect(problems).toEqual([]);
  });
});
