/**
 * The generators' config (mixin style): defaults, an override file read by
 * `npm run gen`, validation, and what every generated rule must take from it —
 * the job selector on every raw series, the runbook base, thresholds and `for`
 * in the descriptions. Plus the metric table's HELP texts in plain words.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_CONFIG, humanDuration, loadConfig, resolveConfig, type MonitoringConfig } from '../../alerts/config.js';
import { ruleFiles } from '../../alerts/generate.js';
import { BURN_RATE_ALERTS } from '../../alerts/slo-alerts.js';
import { METRIC_SPECS } from '../../contract/metric-table.js';
import { generatedFiles, repoConfig } from '../../scripts/gen.js';
import { analyse } from './promql/check.js';
import { addRules, tableCatalog } from './promql/catalog.js';
import { parse } from './promql/parser.js';
import { rules, type RuleEntry } from './sources.js';

type Rule = { alert?: string; record?: string; expr: string; for?: string; keep_firing_for?: string; labels?: Record<string, string>; annotations?: Record<string, string> };

function rulesOf(config: MonitoringConfig): Rule[] {
  return Object.values(ruleFiles(config)).flatMap((text) => (parseYaml(text) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules));
}

/** `job="x", ns=~"y"` → matchers. */
function matchersOf(selector: string): { label: string; op: string; value: string }[] {
  return [...selector.matchAll(/([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g)].map(([, label, op, value]) => ({ label: label!, op: op!, value: value! }));
}

/** Raw series (table metrics and `up`) in rule expressions that lack one of the job matchers. */
function unselected(all: readonly Rule[], jobSelector: string): string[] {
  const catalog = tableCatalog();
  const raw = new Set(catalog.keys());
  addRules(catalog, all as RuleEntry[]);
  const wanted = matchersOf(jobSelector);
  return all.flatMap((rule) =>
    analyse(parse(rule.expr), catalog)
      .references.filter((ref) => raw.has(ref.metric))
      .filter((ref) => !wanted.every((w) => ref.matchers.some((m) => m.label === w.label && m.op === w.op && m.value === w.value)))
      .map((ref) => `${rule.alert ?? rule.record}: ${ref.metric}`),
  );
}

describe('monitoring config', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'holdfast-monitoring-config-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('the checkout generates with the defaults (no monitoring.config.yaml is committed)', () => {
    expect(repoConfig()).toEqual(DEFAULT_CONFIG);
    expect(resolveConfig()).toEqual(DEFAULT_CONFIG);
  });

  it('every raw series in every committed rule selects the Holdfast job', () => {
    const all = rules();
    expect(all.length).toBeGreaterThan(50);
    expect(unselected(all, repoConfig().jobSelector)).toEqual([]);
  });

  it('the selector check fails a rule that forgets the job (the harness can fail)', () => {
    expect(unselected([{ alert: 'HoldfastX', expr: 'sum by (backend) (lock_waiters) > 1' }], 'job="holdfast"')).toEqual(['HoldfastX: lock_waiters']);
  });

  it('an override file changes the job selector, runbook base, cluster, objective, thresholds and for everywhere', () => {
    const file = join(scratch, 'monitoring.config.yaml');
    writeFileSync(
      file,
      [
        'jobSelector: job="locks", namespace="prod"',
        'clusterLabel: region',
        'runbookBaseUrl: https://runbooks.example.com/holdfast/',
        'slo:',
        '  objective: 0.995',
        'thresholds:',
        '  waiters: 250',
        '  lockHeldTooLongSeconds: 7200',
        'for:',
        '  HoldfastWaitersPilingUp: 20m',
        'alertmanager:',
        '  groupWait: 10s',
      ].join('\n'),
    );
    const config = loadConfig(file);
    expect(config.thresholds.storeWriteP99Seconds).toBe(DEFAULT_CONFIG.thresholds.storeWriteP99Seconds);
    const all = rulesOf(config);
    expect(unselected(all, config.jobSelector)).toEqual([]);
    for (const rule of all.filter((r) => r.alert)) {
      expect(rule.annotations!.runbook_url, rule.alert).toMatch(/^https:\/\/runbooks\.example\.com\/holdfast\/holdfast-[a-z-]+\.md$/);
    }
    const waiters = all.find((r) => r.alert === 'HoldfastWaitersPilingUp')!;
    expect(waiters.expr).toBe('sum by (backend, region) (lock_waiters{job="locks", namespace="prod"}) > 250');
    expect(waiters.for).toBe('20m');
    expect(waiters.annotations!.description).toContain('(threshold 250, for 20 minutes)');
    const held = all.find((r) => r.alert === 'HoldfastLockHeldTooLong')!;
    expect(held.expr).toContain('> 7200');
    expect(held.annotations!.description).toContain('(threshold 2 hours, for 5 minutes)');
    const fastBurn = all.find((r) => r.alert === 'HoldfastErrorBudgetFastBurn')!;
    expect(fastBurn.expr).toContain('(14.4 * 0.005)');
    expect(fastBurn.annotations!.description).toContain('the 0.5% budget of a 99.5% objective');
    expect(all.find((r) => r.record === 'holdfast:slo_error_budget:ratio')!.expr).toBe('vector(0.005)');

    const files = generatedFiles(config);
    expect(files['alerts/alertmanager/alertmanager.yml']).toContain('group_wait: 10s');
    expect(files['alerts/alertmanager/alertmanager.yml']).toMatch(/group_by:\n\s+- alertname\n\s+- backend\n\s+- region/);
    const overview = files['dashboards/holdfast-overview.json']!;
    expect(overview).toContain('lock_waiters{job=\\"locks\\", namespace=\\"prod\\"');
    expect(overview).not.toContain('job=\\"holdfast\\"');
    // The cluster label becomes a dashboard variable that every query filters by.
    for (const path of ['dashboards/holdfast-overview.json', 'dashboards/holdfast-slo.json']) {
      const board = JSON.parse(files[path]!) as { templating: { list: { name: string }[] }; panels: { targets?: { expr: string }[] }[] };
      expect(board.templating.list.map((v) => v.name), path).toContain('region');
      const exprs = board.panels.flatMap((panel) => panel.targets ?? []).map((target) => target.expr);
      expect(exprs.length, path).toBeGreaterThan(5);
      expect(exprs.filter((expr) => /lock_|holdfast[:_]|ALERTS|\bup\{/.test(expr) && !expr.includes('region=~"$region"')), path).toEqual([]);
    }
  });

  it('refuses an override with an unknown key, a bad duration, or a for naming no alert', () => {
    expect(() => resolveConfig({ thresholds: { waiter: 3 } })).toThrow(/thresholds: Unrecognized key.*waiter/);
    expect(() => resolveConfig({ for: { HoldfastWaitersPilingUp: 'ten minutes' } })).toThrow(/for\.HoldfastWaitersPilingUp/);
    expect(() => resolveConfig({ jobSelector: 'holdfast' })).toThrow(/jobSelector/);
    expect(() => resolveConfig({ runbookBaseUrl: 'https://example.com/runbooks' })).toThrow(/must end with \//);
    expect(() => ruleFiles(resolveConfig({ for: { HoldfastWaitersPilingUpp: '5m' } }))).toThrow(/"for" names no alert: HoldfastWaitersPilingUpp/);
    const bad = join(scratch, 'list.yaml');
    writeFileSync(bad, '- job\n');
    expect(() => loadConfig(bad)).toThrow(/mapping/);
  });

  it('descriptions state the pending duration each alert waits, and burn rates their windows and factor', () => {
    const problems = rules()
      .filter((rule) => rule.alert)
      .flatMap((rule) => {
        const description = rule.annotations?.description ?? '';
        if (BURN_RATE_ALERTS.includes(rule.alert as never)) {
          const { long_window: long, short_window: short } = rule.labels ?? {};
          const factor = /\(([\d.]+) \*/.exec(rule.expr)?.[1];
          return [long, short, `${factor}x`].filter((part) => !description.includes(`${part}`)).map((part) => `${rule.alert}: ${part}`);
        }
        if (!rule.for) return [];
        return description.includes(humanDuration(rule.for)) ? [] : [`${rule.where}: description does not say "${humanDuration(rule.for)}"`];
      });
    expect(problems).toEqual([]);
  });

  it('a test variant with short for durations leaves expressions alone', () => {
    const quick = resolveConfig({
      for: Object.fromEntries(Object.keys(DEFAULT_CONFIG.for).map((name) => [name, '2s'])),
      slo: { ...DEFAULT_CONFIG.slo, burnTiers: DEFAULT_CONFIG.slo.burnTiers.map((tier) => ({ ...tier, for: '3s' })) },
    });
    const production = rulesOf(repoConfig());
    const variant = rulesOf(quick);
    expect(variant.map((r) => r.expr)).toEqual(production.map((r) => r.expr));
    // The store-unreachable error share waits its window (2m) on top of the configured for.
    const errorShare = (r: Rule) => r.alert === 'HoldfastStoreUnreachable' && r.labels?.signal === 'errors';
    expect(new Set(variant.filter((r) => r.alert && r.for && !errorShare(r)).map((r) => r.for))).toEqual(new Set(['2s', '3s']));
    expect(variant.filter(errorShare).map((r) => r.for)).toEqual(['2m2s']);
  });

  it('the store-unreachable root cause keeps firing until the windows of the pages it inhibits have emptied, derived from the config', () => {
    const keeps = (config: MonitoringConfig) =>
      rulesOf(config)
        .filter((r) => r.alert === 'HoldfastStoreUnreachable')
        .map((r) => `${r.labels!.signal}: ${r.keep_firing_for}`);
    // Defaults: the fast-burn page tier's 30m short window is the longest a page reads, plus 5m to settle.
    expect(keeps(repoConfig())).toEqual(['health: 35m', 'errors: 35m']);
    // A fleet whose second page tier reads a 1h short window holds 1h5m; one with only a 5m page tier
    // holds for the 10m ticket windows (session loss, wait fallback) plus 5m.
    const tiers = DEFAULT_CONFIG.slo.burnTiers;
    expect(keeps(resolveConfig({ slo: { burnTiers: [tiers[0], { ...tiers[1]!, short: '1h' }, tiers[2], tiers[3]] } }))).toEqual(['health: 1h5m', 'errors: 1h5m']);
    expect(keeps(resolveConfig({ slo: { burnTiers: [tiers[0], tiers[2], tiers[3]] } }))).toEqual(['health: 15m', 'errors: 15m']);
    expect(keeps(resolveConfig({ slo: { burnTiers: [tiers[0]] }, thresholds: { notLeaderWindow: '20m' } }))).toEqual(['health: 25m', 'errors: 25m']);
    // An override wins, and its description says so; no other alert keeps firing.
    const overridden = rulesOf(resolveConfig({ keepFiringFor: { HoldfastStoreUnreachable: '10m' } }));
    expect(overridden.filter((r) => r.keep_firing_for).map((r) => `${r.alert}: ${r.keep_firing_for}`)).toEqual(['HoldfastStoreUnreachable: 10m', 'HoldfastStoreUnreachable: 10m']);
    expect(overridden.find((r) => r.alert === 'HoldfastStoreUnreachable')!.annotations!.description).toContain('keeps firing for 10 minutes after the store is back');
    expect(() => ruleFiles(resolveConfig({ keepFiringFor: { HoldfastStoreUnreachabel: '5m' } }))).toThrow(/"keepFiringFor" names no alert: HoldfastStoreUnreachabel/);
    expect(() => resolveConfig({ keepFiringFor: { HoldfastStoreUnreachable: 'half an hour' } })).toThrow(/keepFiringFor\.HoldfastStoreUnreachable/);
  });
});

describe('metric table HELP texts', () => {
  it('are plain words: no contract or route ids (C4, S1, L4, A3…)', () => {
    const withIds = METRIC_SPECS.filter((spec) => /\b[CSLA]\d\b/.test(spec.help)).map((spec) => `${spec.name}: ${spec.help}`);
    expect(withIds).toEqual([]);
    // A sentence: a capital or a number first (`lock_store_up`'s "1 while …"), a full stop last.
    expect(METRIC_SPECS.filter((spec) => !/^[A-Z0-9].{20,}\.$/.test(spec.help)).map((spec) => spec.name)).toEqual([]);
  });
});
