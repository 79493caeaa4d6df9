/**
 * The label contract of every generated alert (C4, "Alert labels"): what an
 * alert pipeline may route, group and inhibit on. Checked on the committed
 * rules, and on a variant generated with a cluster label configured, by
 * inferring each alert's output labels from its expression.
 */
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { inhibitions } from '../../alerts/alertmanager.js';
import { SERVICE, SEVERITY, SLO_NAME, groupingLabels, resolveConfig, type MonitoringConfig } from '../../alerts/config.js';
import { alertmanagerFiles, ruleFiles } from '../../alerts/generate.js';
import { FLEET_WIDE } from '../../alerts/health-alerts.js';
import { BURN_RATE_ALERTS } from '../../alerts/slo-alerts.js';
import { repoConfig } from '../../scripts/gen.js';
import { analyse } from './promql/check.js';
import { addRules, tableCatalog, type RuleLike } from './promql/catalog.js';
import { parse } from './promql/parser.js';
import { alertingRules, rules } from './sources.js';

/**
 * Labels an alert will carry: inferred from its expression, plus its static
 * labels. A configured cluster label is a target label, so every scraped series has it.
 */
function outputLabels(config: MonitoringConfig, rule: RuleLike, allRules: readonly RuleLike[]): Set<string> {
  const catalog = tableCatalog();
  if (config.clusterLabel) {
    for (const [name, series] of catalog) catalog.set(name, { ...series, labels: new Set([...series.labels, config.clusterLabel]) });
  }
  addRules(catalog, allRules);
  const value = analyse(parse(rule.expr), catalog).value;
  const inferred = value.type === 'vector' ? [...value.labels] : [];
  return new Set([...inferred, ...Object.keys(rule.labels ?? {})]);
}

/** Every way an alert breaks the contract, as "alert: problem" lines. */
function contractViolations(config: MonitoringConfig, all: readonly RuleLike[]): string[] {
  const severities = Object.values(SEVERITY) as string[];
  return all
    .filter((rule) => rule.alert)
    .flatMap((rule) => {
      const labels = rule.labels ?? {};
      const output = outputLabels(config, rule, all);
      const fleetWide = labels.backend === FLEET_WIDE.backend;
      return [
        ...(severities.includes(labels.severity ?? '') ? [] : [`severity "${labels.severity}" not in ${severities.join('/')}`]),
        ...(labels.service === SERVICE ? [] : [`service is "${labels.service}", not "${SERVICE}"`]),
        ...(BURN_RATE_ALERTS.includes(rule.alert as never) && labels.slo !== SLO_NAME ? [`burn-rate alert without slo="${SLO_NAME}"`] : []),
        ...(!BURN_RATE_ALERTS.includes(rule.alert as never) && labels.slo !== undefined ? ['slo on an alert that is not a burn rate'] : []),
        ...groupingLabels(config)
          .filter((label) => !output.has(label) && !(fleetWide && label !== 'backend'))
          .map((label) => `lacks grouping label "${label}"`),
      ].map((problem) => `${rule.alert}: ${problem}`);
    });
}

function generatedRules(config: MonitoringConfig): RuleLike[] {
  return Object.values(ruleFiles(config)).flatMap((text) =>
    (parseYaml(text) as { groups: { rules: RuleLike[] }[] }).groups.flatMap((g) => g.rules),
  );
}

describe('alert label contract', () => {
  it('every committed alert has severity, service, backend (and slo on burn rates)', () => {
    expect(alertingRules().length).toBeGreaterThanOrEqual(15);
    expect(contractViolations(repoConfig(), rules())).toEqual([]);
  });

  it('severity is the action in Alertmanager words: page → critical, ticket → warning, info → info', () => {
    expect(SEVERITY).toEqual({ page: 'critical', ticket: 'warning', info: 'info' });
    const bySeverity = (severity: string) => alertingRules().filter((r) => r.labels?.severity === severity).map((r) => r.alert);
    expect(bySeverity('critical')).toEqual(
      expect.arrayContaining(['HoldfastStoreUnreachable', 'HoldfastErrorBudgetFastBurn', 'HoldfastNotLeaderAnswers', 'HoldfastTargetMissing']),
    );
    expect(bySeverity('info')).toEqual(['HoldfastWatchdog']);
  });

  it('only alerts that watch the whole fleet carry backend="all"', () => {
    const fleetWide = alertingRules().filter((r) => r.labels?.backend === FLEET_WIDE.backend).map((r) => r.alert);
    expect(fleetWide.sort()).toEqual(['HoldfastTargetMissing', 'HoldfastWatchdog']);
  });

  it('with a cluster label configured, every alert but the fleet-wide ones keeps it, and Alertmanager groups and inhibits on it', () => {
    const config = resolveConfig({ clusterLabel: 'cluster' });
    const all = generatedRules(config);
    expect(contractViolations(config, all)).toEqual([]);
    const clustered = all.filter((r) => r.alert && r.labels?.backend !== FLEET_WIDE.backend);
    expect(clustered.filter((r) => !outputLabels(config, r, all).has('cluster')).map((r) => r.alert)).toEqual([]);
    const am = parseYaml(Object.values(alertmanagerFiles(config))[0]!) as {
      route: { group_by: string[] };
      inhibit_rules: { equal: string[] }[];
    };
    expect(am.route.group_by).toEqual(['alertname', 'backend', 'cluster']);
    expect(am.inhibit_rules.filter((rule) => rule.equal.includes('backend')).every((rule) => rule.equal.includes('cluster'))).toBe(true);
  });

  it('the checker fails an alert that lacks a pinned label (the harness can fail)', () => {
    const config = repoConfig();
    const broken: RuleLike[] = [
      { alert: 'HoldfastNoBackend', expr: 'sum(lock_held{job="holdfast"}) > 1', labels: { severity: 'critical', service: SERVICE } },
      { alert: 'HoldfastNoService', expr: 'sum by (backend) (lock_held) > 1', labels: { severity: 'warning' } },
      { alert: 'HoldfastPage', expr: 'sum by (backend) (lock_held) > 1', labels: { severity: 'page', service: SERVICE } },
      { alert: 'HoldfastErrorBudgetFastBurn', expr: 'sum by (backend) (lock_held) > 1', labels: { severity: 'critical', service: SERVICE } },
    ];
    expect(contractViolations(config, broken)).toEqual([
      'HoldfastNoBackend: lacks grouping label "backend"',
      'HoldfastNoService: service is "undefined", not "holdfast"',
      'HoldfastPage: severity "page" not in critical/warning/info',
      `HoldfastErrorBudgetFastBurn: burn-rate alert without slo="${SLO_NAME}"`,
    ]);
  });

  it('every inhibition source and target is a generated alert', () => {
    const names = new Set(alertingRules().map((r) => r.alert));
    const referenced = inhibitions(repoConfig()).flatMap((rule) => [rule.source, ...rule.targets]);
    expect(referenced.filter((name) => !names.has(name))).toEqual([]);
  });
});
