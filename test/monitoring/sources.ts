/**
 * Reads the COMMITTED monitoring artefacts (what gets deployed), not freshly
 * generated ones: a metric renamed in the table must make these fail until
 * `npm run gen` is run and the hand-written runbooks and promtool tests are fixed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import type { RuleLike } from './promql/catalog.js';

export const REPO_ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

export interface SourceExpr {
  /** Human-readable location for failure messages. */
  readonly where: string;
  readonly expr: string;
}

export interface RuleEntry extends RuleLike {
  readonly where: string;
  readonly for?: string;
  readonly keep_firing_for?: string;
  readonly annotations?: Record<string, string>;
  readonly group: string;
  readonly file: string;
}

export function read(path: string): string {
  return readFileSync(join(REPO_ROOT, path), 'utf8');
}

export function listFiles(dir: string, suffix: string): string[] {
  return readdirSync(join(REPO_ROOT, dir))
    .filter((name) => name.endsWith(suffix))
    .sort()
    .map((name) => `${dir}/${name}`);
}

export const ruleFilePaths = (): string[] => listFiles('alerts', '.rules.yml');

interface RawGroup {
  name: string;
  interval?: string;
  rules: (RuleLike & { for?: string; keep_firing_for?: string; annotations?: Record<string, string> })[];
}

/** Parsed once per test file: the YAML is large and the files do not change during a run. */
function once<T>(compute: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= compute());
}

export const ruleGroups = once((): { file: string; group: RawGroup }[] =>
  ruleFilePaths().flatMap((file) =>
    (parseYaml(read(file)) as { groups: RawGroup[] }).groups.map((group) => ({ file, group })),
  ),
);

export function rules(): RuleEntry[] {
  return ruleGroups().flatMap(({ file, group }) =>
    group.rules.map((rule, index) => ({
      ...rule,
      file,
      group: group.name,
      where: `${file} › ${group.name} › #${index + 1} ${rule.record ?? rule.alert}`,
    })),
  );
}

export const alertingRules = (): RuleEntry[] => rules().filter((rule) => rule.alert !== undefined);
export const alertNames = (): string[] => [...new Set(alertingRules().map((rule) => rule.alert!))];

// ── dashboards ──────────────────────────────────────────────────────────────

export interface DashboardPanel {
  id?: number;
  type: string;
  title: string;
  description?: string;
  targets?: { expr?: string; datasource?: { uid?: string } }[];
  panels?: DashboardPanel[];
  fieldConfig?: { defaults?: { unit?: string; thresholds?: { steps?: unknown[] } } };
}

export interface Dashboard {
  uid?: string;
  title: string;
  panels: DashboardPanel[];
  templating: { list: { name: string; type: string; query?: unknown }[] };
}

export const dashboardPaths = (): string[] => listFiles('dashboards', '.json');

export function dashboards(): { path: string; dashboard: Dashboard }[] {
  return dashboardPaths().map((path) => ({ path, dashboard: JSON.parse(read(path)) as Dashboard }));
}

/** Every non-row panel, including panels nested in collapsed rows. */
export function panelsOf(dashboard: Dashboard): DashboardPanel[] {
  return dashboard.panels.flatMap((panel) => (panel.type === 'row' ? (panel.panels ?? []) : [panel]));
}

export function dashboardExprs(): SourceExpr[] {
  return dashboards().flatMap(({ path, dashboard }) =>
    panelsOf(dashboard).flatMap((panel) =>
      (panel.targets ?? []).map((target, i) => ({ where: `${path} › ${panel.title} › target ${i + 1}`, expr: target.expr ?? '' })),
    ),
  );
}

export function variableQueries(): SourceExpr[] {
  return dashboards().flatMap(({ path, dashboard }) =>
    dashboard.templating.list
      .filter((variable) => variable.type === 'query')
      .map((variable) => ({ where: `${path} › $${variable.name}`, expr: String(variable.query) })),
  );
}

// ── runbooks ────────────────────────────────────────────────────────────────

export const runbookPaths = (): string[] => listFiles('runbooks', '.md');

/** Every fenced ```promql block of every runbook: one expression per block. */
export function runbookExprs(): SourceExpr[] {
  return runbookPaths().flatMap((path) =>
    [...read(path).matchAll(/```promql\n([\s\S]*?)```/g)].map((match, i) => ({
      where: `${path} › promql block ${i + 1}`,
      expr: match[1]!,
    })),
  );
}

// ── promtool unit tests ─────────────────────────────────────────────────────

export interface PromtoolTestFile {
  rule_files: string[];
  evaluation_interval?: string;
  tests: {
    name?: string;
    interval?: string;
    input_series: { series: string; values: string }[];
    alert_rule_test?: { eval_time: string; alertname: string; exp_alerts?: { exp_labels?: Record<string, string> }[] }[];
    promql_expr_test?: { expr: string; eval_time: string; exp_samples?: { labels: string; value: number }[] }[];
  }[];
}

export const promtoolTestPaths = (): string[] => listFiles('alerts/tests', '.yml');

export const promtoolTests = once((): { path: string; file: PromtoolTestFile }[] =>
  promtoolTestPaths().map((path) => ({ path, file: parseYaml(read(path)) as PromtoolTestFile })),
);

export function promtoolExprs(): SourceExpr[] {
  return promtoolTests().flatMap(({ path, file }) =>
    file.tests.flatMap((test, t) => [
      ...test.input_series.map((input, i) => ({ where: `${path} › test ${t + 1} › series ${i + 1}`, expr: input.series })),
      ...(test.promql_expr_test ?? []).map((x, i) => ({ where: `${path} › test ${t + 1} › expr ${i + 1}`, expr: x.expr })),
    ]),
  );
}
