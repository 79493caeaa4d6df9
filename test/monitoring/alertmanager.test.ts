/**
 * The generated Alertmanager configuration, checked by Debian's Alertmanager
 * tools: `amtool check-config` accepts it, and `amtool config routes test`
 * sends every generated alert, with each severity, where the route contract
 * says (critical → pager, warning → ticket, info → info, Watchdog → the
 * dead-man's switch). Inhibition is exercised live in alert-pipeline-live.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ALERTMANAGER_PATH, RECEIVERS, expectedReceiver } from '../../alerts/alertmanager.js';
import { SEVERITY } from '../../alerts/config.js';
import { REPO_ROOT, alertingRules, read } from './sources.js';

function amtool(...args: string[]): { status: number | null; stdout: string; output: string } {
  const result = spawnSync('amtool', args, { cwd: REPO_ROOT, encoding: 'utf8', timeout: 60_000 });
  if (result.error) throw new Error(`amtool could not run (${result.error.message}); install it with scripts/ensure-deps.sh --test`);
  return { status: result.status, stdout: result.stdout.trim(), output: `${result.stdout}${result.stderr}` };
}

/** The receiver amtool resolves for a label set, and whether it equals `expected`. */
function route(file: string, expected: string, labels: Record<string, string>) {
  const pairs = Object.entries(labels).map(([name, value]) => `${name}=${value}`);
  return amtool('config', 'routes', 'test', `--config.file=${file}`, `--verify.receivers=${expected}`, ...pairs);
}

describe('Alertmanager configuration (amtool)', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'holdfast-amtool-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('amtool check-config accepts the generated file: a route, four inhibit rules, four receivers', () => {
    const { status, output } = amtool('check-config', ALERTMANAGER_PATH);
    expect(output).toContain('SUCCESS');
    expect(output).toMatch(/- 4 inhibit rules/);
    expect(output).toMatch(/- 4 receivers/);
    expect(status).toBe(0);
  });

  it('amtool check-config rejects a route to a receiver that does not exist (the harness can fail)', () => {
    const config = parseYaml(read(ALERTMANAGER_PATH)) as { route: { receiver: string } };
    config.route.receiver = 'nobody';
    const broken = join(scratch, 'broken.yml');
    writeFileSync(broken, JSON.stringify(config));
    const { status, output } = amtool('check-config', broken);
    expect(status).not.toBe(0);
    expect(output).toMatch(/undefined receiver "nobody"/);
  });

  const cases = alertingRules().flatMap((rule) =>
    Object.values(SEVERITY).map((severity) => ({
      alert: rule.alert!,
      severity,
      // The alert's own static labels, with the severity under test; backend as the expression would give it.
      labels: { backend: 'postgres', ...rule.labels, alertname: rule.alert!, severity },
    })),
  );

  it('covers every generated alert with every severity', () => {
    expect(new Set(cases.map((c) => c.alert)).size).toBeGreaterThanOrEqual(15);
    expect(cases.length).toBe(alertingRules().length * 3);
  });

  it.each(cases)('$alert with severity=$severity routes as the contract says', ({ alert, severity, labels }) => {
    const expected = expectedReceiver(alert, severity);
    const { status, stdout, output } = route(ALERTMANAGER_PATH, expected, labels);
    expect({ receiver: stdout, status }, output).toEqual({ receiver: expected, status: 0 });
  });

  it('the shipped severities land on pager, ticket and dead-man\'s switch as intended', () => {
    const actual = Object.fromEntries(alertingRules().map((rule) => [rule.alert!, expectedReceiver(rule.alert!, rule.labels!.severity!)]));
    expect(actual.HoldfastStoreUnreachable).toBe(RECEIVERS.pager);
    expect(actual.HoldfastErrorBudgetFastBurn).toBe(RECEIVERS.pager);
    expect(actual.HoldfastStoreSlow).toBe(RECEIVERS.ticket);
    expect(actual.HoldfastLockHeldTooLong).toBe(RECEIVERS.ticket);
    expect(actual.HoldfastWatchdog).toBe(RECEIVERS.deadMansSwitch);
  });

  it('a wrong expectation fails the route test (the harness can fail)', () => {
    const { status, stdout } = route(ALERTMANAGER_PATH, RECEIVERS.pager, {
      alertname: 'HoldfastStoreSlow', severity: 'warning', service: 'holdfast', backend: 'postgres',
    });
    expect(stdout.split('\n')[0]).toBe(RECEIVERS.ticket);
    expect(status).not.toBe(0);
  });
});
