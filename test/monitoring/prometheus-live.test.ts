/**
 * A real Prometheus (Debian's `prometheus`) scrapes a real Holdfast server
 * under a small bounded load, with the generated rule files loaded, and the
 * recording rules return values over its HTTP API. Also asserts that every
 * generated rule group evaluates without error against real series.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { HOLDFAST_JOB } from '../../alerts/config.js';
import { RECORDED } from '../../alerts/slo.js';
import { eventually, httpClient } from '../support/http.js';
import { startPrometheus, type RunningPrometheus } from '../support/prometheus.js';
import { startServer, type TestServer } from '../support/server.js';
import { read, ruleFilePaths } from './sources.js';

/** 1 s scrapes and evaluations so a test sees rates within seconds (production uses the defaults). */
const INTERVAL = '1s';

/**
 * The generated rule files as they are, except that a group's own `interval`
 * (the 30-day group runs every 5 m) is dropped so it runs at the test's 1 s.
 */
function writeRuleFiles(dir: string): string[] {
  return ruleFilePaths().map((path, i) => {
    const file = parseYaml(read(path)) as { groups: { interval?: string }[] };
    for (const group of file.groups) delete group.interval;
    const target = join(dir, `rules-${i}.yml`);
    writeFileSync(target, stringify(file));
    return target;
  });
}

/** Bounded load: sessions, acquire/renew/release, contention and one server-side wait per round. */
async function driveLoad(server: TestServer, rounds: number): Promise<{ granted: number; contended: number }> {
  const api = httpClient(server.url);
  const holder = (await api.openSession({ ttlMillis: 30_000, owner: 'monitoring-test-a' })).body.sessionId as string;
  const rival = (await api.openSession({ ttlMillis: 30_000, owner: 'monitoring-test-b' })).body.sessionId as string;
  let granted = 0;
  let contended = 0;
  for (let round = 0; round < rounds; round += 1) {
    const key = `monitoring/key-${round % 4}`;
    const grant = await api.acquire(key, { sessionId: holder, ttlMillis: 10_000 });
    if (grant.status === 200) granted += 1;
    const refused = await api.acquire(key, { sessionId: rival });
    if (refused.status === 409) contended += 1;
    // A short server-side wait that ends at its deadline (lock_wait_seconds).
    await api.acquire(key, { sessionId: rival, waitMillis: 50 });
    await api.renew(key, { sessionId: holder, fencingToken: grant.body.fencingToken });
    await api.release(key, { sessionId: holder, fencingToken: grant.body.fencingToken });
    await api.heartbeat(holder);
  }
  await api.closeSession(rival);
  await api.closeSession(holder);
  return { granted, contended };
}

describe('real Prometheus with the generated rules', () => {
  let server: TestServer;
  let prometheus: RunningPrometheus;

  beforeAll(async () => {
    server = await startServer({ store: 'embedded' });
    const target = new URL(server.url).host;
    prometheus = await startPrometheus({
      configFor: (dir) => ({
        global: { scrape_interval: INTERVAL, evaluation_interval: INTERVAL, scrape_timeout: INTERVAL },
        rule_files: writeRuleFiles(dir),
        scrape_configs: [{ job_name: HOLDFAST_JOB, metrics_path: '/metrics', static_configs: [{ targets: [target] }] }],
      }),
    });
  }, 120_000);

  afterAll(async () => {
    await prometheus?.stop();
    await server?.stop();
  }, 60_000);

  it('scrapes the Holdfast server under load and the S1 recording rules return values', async () => {
    // Load only after the first successful scrape, so counters rise between scrapes.
    await prometheus.until(`up{job="${HOLDFAST_JOB}"} == 1`);
    const load = await driveLoad(server, 20);
    expect(load.granted).toBe(20);
    expect(load.contended).toBe(20);

    const requests = await prometheus.until(
      `${RECORDED.requestsRate('5m')} > 0`,
      (samples) => new Set(samples.map((s) => s.metric.route)).size === 3,
    );
    expect(requests.map((s) => s.metric.route).sort()).toEqual(['acquire', 'release', 'renew']);
    expect(requests.every((s) => s.metric.backend === server.backend)).toBe(true);

    // Contention is a correct answer: no bad answers, so the ratio is 0 — a value, not "no data".
    const ratio = await prometheus.until(RECORDED.errorRatio('5m'));
    expect(ratio).toEqual([{ metric: { __name__: RECORDED.errorRatio('5m'), backend: server.backend }, value: [expect.any(Number), '0'] }]);

    for (const window of ['30m', '1h', '2h', '6h', '1d', '3d']) {
      const samples = await prometheus.until(RECORDED.errorRatio(window));
      expect(samples[0]!.metric.backend, window).toBe(server.backend);
    }
    const compliance = await prometheus.until(`${RECORDED.requestsIncrease} > 0`);
    expect(compliance.length).toBe(3);
    expect((await prometheus.until(RECORDED.errorRatioCompliance))[0]!.value[1]).toBe('0');
  }, 120_000);

  it('every generated rule group is loaded and evaluates without error against real series', async () => {
    type Rules = { data: { groups: { name: string; rules: { name: string; health: string; lastError?: string }[] }[] } };
    // Wait until every rule has been evaluated at least once (health "unknown" before that).
    const body = await eventually(async () => {
      const rules = (await (await fetch(`${prometheus.url}/api/v1/rules`)).json()) as Rules;
      const evaluated = rules.data.groups.length > 0 && rules.data.groups.every((g) => g.rules.every((r) => r.health !== 'unknown'));
      return evaluated ? rules : undefined;
    }, 60_000, 500);
    const expectedGroups = ruleFilePaths().flatMap((path) =>
      (parseYaml(read(path)) as { groups: { name: string }[] }).groups.map((g) => g.name),
    );
    expect(body.data.groups.map((g) => g.name).sort()).toEqual([...expectedGroups].sort());
    const unhealthy = body.data.groups.flatMap((g) =>
      g.rules.filter((r) => r.health !== 'ok').map((r) => `${g.name}/${r.name}: ${r.health} ${r.lastError ?? ''}`),
    );
    expect(unhealthy).toEqual([]);
  }, 90_000);

  it('the watchdog fires and no other alert fires on a healthy server', async () => {
    await prometheus.until('ALERTS{alertname="HoldfastWatchdog", alertstate="firing"}');
    const firing = await prometheus.query('ALERTS{alertstate="firing", alertname!="HoldfastWatchdog"}');
    expect(firing.map((s) => s.metric.alertname)).toEqual([]);
  }, 90_000);
});
