/**
 * The whole alert pipeline, live: a Holdfast server on a real PostgreSQL
 * (reached through two TCP proxies the test controls: one that refuses, one
 * that black-holes), a real Prometheus scraping it with the generated rules (a
 * test variant with short durations, rendered into a temp dir; the committed
 * files are not touched), a real Alertmanager with the generated route tree and
 * inhibitions, and a webhook receiver in the test.
 *
 * Under load the store goes away twice, one outage after the other on the same
 * stack: refused (PostgreSQL down), then hung (connections accepted, nothing
 * answered). Each time exactly the root-cause page must arrive, with its
 * runbook URL, while the symptoms it causes fire in Prometheus but are
 * inhibited; after recovery the root cause keeps firing until the symptoms have
 * resolved, so none of them pages on the outage's tail, and then it resolves.
 * The promtool test (alerts/tests/store-outage.test.yml) covers the production
 * durations over the full hour after an outage.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { RECEIVERS, STORE_OUTAGE_SYMPTOMS, alertmanagerConfig, withReceivers } from '../../alerts/alertmanager.js';
import { DEFAULT_CONFIG, HOLDFAST_JOB, resolveConfig } from '../../alerts/config.js';
import { runbookUrl } from '../../alerts/define-alert.js';
import { ruleFiles } from '../../alerts/generate.js';
import { STORE_UNREACHABLE_ALERT, WATCHDOG_ALERT } from '../../alerts/health-alerts.js';
import { FAST_BURN_ALERT, SLOW_BURN_ALERT } from '../../alerts/slo-alerts.js';
import { startBlackholeProxy, type BlackholeProxy } from '../support/blackhole-proxy.js';
import { eventually, httpClient } from '../support/http.js';
import { startPrometheus, type PromSample, type RunningPrometheus } from '../support/prometheus.js';
import { sharedPostgres, startServer, type TestServer } from '../support/server.js';
import { readC4EventContracts, violationsOf } from '../observability/support/c4-events.js';
import { startAlertmanager, startWebhookReceiver, type NotifiedAlert, type Notification, type RunningAlertmanager, type WebhookReceiver } from './support/alertmanager.js';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.js';

/**
 * Production expressions and thresholds, test-sized durations. The root cause
 * waits 2 s (its error-share signal its 10 s window on top), every symptom
 * longer, so the root cause reaches Alertmanager first, as with the production
 * `for` values (1 m against 2 m and more). The windows a symptom reads after the
 * store is back are shortened where the config allows (NOT_LEADER rate, burn
 * rates: 20 s at most), and the root cause keeps firing 45 s after recovery, the
 * way production keeps it 35 m past its 30 m windows. The windows that cannot be
 * shortened belong to symptoms this outage does not fire (store-slow over 5 m:
 * writes stay fast; session loss and wait fallback over 10 m: sessions outlive
 * the outage, the load does not wait); the test would catch them paging.
 */
const TEST_CONFIG = resolveConfig({
  for: Object.fromEntries(Object.keys(DEFAULT_CONFIG.for).map((name) => [name, name === STORE_UNREACHABLE_ALERT ? '2s' : '20s'])),
  thresholds: { storeErrorWindow: '10s', notLeaderWindow: '10s' },
  slo: {
    burnTiers: [
      { long: '1m', short: '10s', factor: 14.4, action: 'page', for: '8s' },
      { long: '2m', short: '20s', factor: 6, action: 'page', for: '8s' },
      { long: '3m', short: '20s', factor: 3, action: 'ticket', for: '8s' },
      { long: '4m', short: '20s', factor: 1, action: 'ticket', for: '8s' },
    ],
  },
  keepFiringFor: { [STORE_UNREACHABLE_ALERT]: '45s' },
  alertmanager: { groupWait: '1s', groupInterval: '2s', repeatInterval: '1h', watchdogRepeatInterval: '1m' },
});
const AM_GROUP_INTERVAL_MS = 2_000;
const KEEP_FIRING_MS = 45_000;
const INTERVAL = '1s';
const SHORTEST_RATIO = 'holdfast:slo_errors:ratio_rate10s';
const SYMPTOMS = STORE_OUTAGE_SYMPTOMS.join('|');

/**
 * Acquire/release traffic from a few sessions, paced, until stopped; failures are
 * counted, not thrown. Each worker heartbeats its session every 5 s, as clients
 * do: heartbeats are still sent to a store counted down, so the outage sees them.
 */
function startLoad(server: TestServer, workers = 4) {
  const api = httpClient(server.url);
  const statuses = new Map<number, number>();
  let running = true;
  const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
  const worker = async (index: number) => {
    const opened = await api.openSession({ ttlMillis: 60_000, owner: `pipeline-load-${index}` });
    if (opened.status !== 201) throw new Error(`load: could not open a session: ${opened.status} ${JSON.stringify(opened.body)}`);
    const sessionId = opened.body.sessionId as string;
    let lastHeartbeat = Date.now();
    while (running) {
      if (Date.now() - lastHeartbeat >= 5_000) {
        lastHeartbeat = Date.now();
        await api.heartbeat(sessionId).catch(() => undefined);
      }
      const key = `pipeline/key-${index}`;
      const grant = await api.acquire(key, { sessionId }).catch(() => ({ status: 0, body: undefined }));
      count(grant.status);
      if (grant.status === 200) {
        const released = await api.release(key, { sessionId, fencingToken: grant.body.fencingToken }).catch(() => ({ status: 0 }));
        count(released.status);
      }
      // Pacing: about 25 requests/s per worker, so a dead store does not turn the loop into a busy spin.
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
  };
  const done = Promise.all(Array.from({ length: workers }, (_, i) => worker(i)));
  return {
    statuses,
    async stop() {
      running = false;
      await done;
    },
  };
}

const alertNamesIn = (notifications: readonly Notification[]) => [...new Set(notifications.flatMap((n) => n.alerts.map((a) => a.labels.alertname!)))].sort();

function describeNotifications(notifications: readonly Notification[], start: number): string {
  return notifications
    .map((n) =>
      n.alerts
        .map((a) =>
          `  +${((n.receivedAt - start) / 1000).toFixed(1).padStart(6)} s  ${new Date(n.receivedAt).toISOString()}  ${n.path.padEnd(16)} ` +
          `${a.status.padEnd(8)} ${a.labels.alertname} {severity=${a.labels.severity}, backend=${a.labels.backend}, signal=${a.labels.signal ?? '-'}}`,
        )
        .join('\n'),
    )
    .join('\n');
}

/** An instant query at a past moment: what the rules said then (ALERTS is stored like any series). */
async function queryAt(prometheus: RunningPrometheus, expr: string, atMillis: number): Promise<PromSample[]> {
  const url = `${prometheus.url}/api/v1/query?query=${encodeURIComponent(expr)}&time=${atMillis / 1000}`;
  const body = (await (await fetch(url)).json()) as { status: string; error?: string; data: { result: PromSample[] } };
  if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
  return body.data.result;
}

describe('alert pipeline: a PostgreSQL outage under load pages once, with its cause, and nothing pages on its tail', () => {
  let refusing: TcpProxy;
  let hole: BlackholeProxy;
  let server: TestServer;
  let webhook: WebhookReceiver;
  let alertmanager: RunningAlertmanager;
  let prometheus: RunningPrometheus;
  let load: ReturnType<typeof startLoad> | undefined;
  const start = Date.now();

  beforeAll(async () => {
    const cluster = await sharedPostgres();
    const database = new URL(await cluster.createDatabase());
    // server → black hole → refusing proxy → PostgreSQL: each outage is one proxy's doing.
    refusing = await startTcpProxy({ host: '127.0.0.1', port: Number(database.port) });
    hole = await startBlackholeProxy({ host: '127.0.0.1', port: refusing.port });
    database.port = String(hole.port);
    server = await startServer({ store: 'postgres', env: { DATABASE_URL: database.toString() } });

    webhook = await startWebhookReceiver();
    const hook = (path: string) => [{ url: `${webhook.url}/${path}`, send_resolved: true }];
    alertmanager = await startAlertmanager(
      withReceivers(alertmanagerConfig(TEST_CONFIG), [
        { name: RECEIVERS.pager, webhook_configs: hook('pager') },
        { name: RECEIVERS.ticket, webhook_configs: hook('ticket') },
        { name: RECEIVERS.info },
        { name: RECEIVERS.deadMansSwitch, webhook_configs: hook('deadmansswitch') },
      ]),
    );

    const target = new URL(server.url).host;
    prometheus = await startPrometheus({
      // Alertmanager discovery takes seconds; alerts evaluated before it are dropped and resent only
      // after this delay (default 1 m). Also how often firing alerts are refreshed in Alertmanager.
      args: ['--rules.alert.resend-delay=1s'],
      configFor: (dir) => ({
        global: { scrape_interval: INTERVAL, evaluation_interval: INTERVAL, scrape_timeout: INTERVAL },
        rule_files: Object.entries(ruleFiles(TEST_CONFIG)).map(([path, content], i) => {
          const file = join(dir, `test-variant-${i}-${path.split('/').pop()}`);
          writeFileSync(file, content);
          return file;
        }),
        alerting: { alertmanagers: [{ static_configs: [{ targets: [new URL(alertmanager.url).host] }] }] },
        scrape_configs: [{ job_name: HOLDFAST_JOB, metrics_path: '/metrics', static_configs: [{ targets: [target] }] }],
      }),
    });

    // The pipeline works before anything breaks: the watchdog reaches the dead-man's switch, nothing pages.
    await prometheus.until(`up{job="${HOLDFAST_JOB}"} == 1`);
    load = startLoad(server);
    await eventually(async () => alertNamesIn(webhook.notifications.filter((n) => n.path === '/deadmansswitch')).includes(WATCHDOG_ALERT), 30_000, 200);
    // Healthy traffic reaches the SLO windows first: a 0 error ratio is a value, not "no data".
    await prometheus.until(`${SHORTEST_RATIO}{backend="postgres"} == 0`);
    await prometheus.until(`lock_store_up{backend="postgres"} == 1`);
  }, 180_000);

  afterAll(async () => {
    await load?.stop();
    await prometheus?.stop();
    await alertmanager?.stop();
    await webhook?.close();
    hole?.forward();
    await refusing?.restore();
    await server?.stop();
    await hole?.close();
    await refusing?.close();
  }, 60_000);

  const received = (since: number, path?: string) => webhook.notifications.filter((n) => n.receivedAt >= since && (!path || n.path === path));

  function explainOnFailure() {
    onTestFailed(async () => {
      process.stdout.write(
        `notifications so far:\n${describeNotifications(webhook.notifications, start)}\n` +
          `alertmanager holds: ${JSON.stringify((await alertmanager.alerts()).map((a) => [a.labels.alertname, a.labels.signal, a.status.state]))}\n` +
          `load answers: ${JSON.stringify(Object.fromEntries(load?.statuses ?? []))}\n` +
          `store up: ${JSON.stringify((await prometheus.query('lock_store_up')).map((x) => x.value[1]))}\n` +
          `store calls/s: ${JSON.stringify((await prometheus.query('sum by (outcome) (rate(lock_store_seconds_count[10s]))')).map((x) => [x.metric.outcome, x.value[1]]))}\n` +
          `prometheus alerts: ${JSON.stringify((await prometheus.query('ALERTS')).map((a) => [a.metric.alertname, a.metric.signal, a.metric.alertstate]))}\n` +
          `server store events: ${JSON.stringify(server.logs.filter((l) => String(l.event).startsWith('store_')))}\n` +
          `alertmanager log:\n${alertmanager.output.join('')}\nprometheus log:\n${prometheus.output.join('')}\n`,
      );
    });
  }

  /**
   * One outage and its aftermath; returns what was delivered, for the caller's assertions.
   * Every wait is for an observed state (an alert firing, a notification); the two fixed
   * observation windows (three group intervals) are there to prove that nothing else arrives.
   */
  async function outage(cut: () => Promise<void> | void, restore: () => Promise<void> | void) {
    // Nothing is pending or firing but the watchdog: the previous outage, if any, is over.
    await prometheus.until(`ALERTS{alertname!="${WATCHDOG_ALERT}"}`, (samples) => samples.length === 0);
    const cutAt = Date.now();
    await cut();

    const page = await eventually(
      async () =>
        received(cutAt, '/pager')
          .flatMap((n) => n.alerts)
          .find((a) => a.labels.alertname === STORE_UNREACHABLE_ALERT && a.labels.signal === 'health' && a.status === 'firing'),
      60_000,
      200,
    );

    // The symptoms really fire in Prometheus, and Alertmanager holds them as suppressed by the root cause.
    for (const symptom of ['HoldfastNotLeaderAnswers', FAST_BURN_ALERT, SLOW_BURN_ALERT]) {
      await prometheus.until(`ALERTS{alertname="${symptom}", alertstate="firing", backend="postgres"}`);
      const held = await eventually(async () => {
        const alerts = await alertmanager.alerts(`alertname="${symptom}"`);
        return alerts.length > 0 && alerts.every((a) => a.status.state === 'suppressed' && a.status.inhibitedBy.length > 0) ? alerts : undefined;
      }, 30_000, 200);
      expect(held.length).toBeGreaterThan(0);
    }
    // Give the muted groups three flushes to prove nothing leaks: an observation window, not a wait for success.
    const observedFrom = Date.now();
    await eventually(async () => Date.now() - observedFrom >= 3 * AM_GROUP_INTERVAL_MS, 10_000, 200);

    const restoredAt = Date.now();
    await restore();
    await prometheus.until(`lock_store_up{backend="postgres"} == 1`);
    // The root cause resolves only once both of its signals have stopped firing.
    const resolved = await eventually(async () => {
      const alerts = received(restoredAt, '/pager')
        .flatMap((n) => n.alerts)
        .filter((a) => a.labels.alertname === STORE_UNREACHABLE_ALERT);
      const last = new Map<string, NotifiedAlert>();
      for (const alert of alerts) last.set(alert.labels.signal!, alert);
      const health = last.get('health');
      return health?.status === 'resolved' && [...last.values()].every((a) => a.status === 'resolved') ? [...last.values()] : undefined;
    }, KEEP_FIRING_MS + 60_000, 200);
    const resolvedAt = Math.max(...resolved.map((a) => new Date(a.endsAt).getTime()));
    // Three more flushes after the root cause resolved: a symptom still firing would page now.
    const settledFrom = Date.now();
    await eventually(async () => Date.now() - settledFrom >= 3 * AM_GROUP_INTERVAL_MS, 10_000, 200);

    // What the rules said after the store came back, read from the stored ALERTS series.
    const symptomsFiring = `ALERTS{alertstate="firing", alertname=~"${SYMPTOMS}", backend="postgres"}`;
    // Any instant of the first 10 s after the return (not one chosen instant: how fast a burn window
    // drains after the return depends on the machine's speed, which this test must not race).
    const tail = await queryAt(prometheus, `max_over_time(${symptomsFiring}[10s])`, restoredAt + 10_000);
    const atResolution = await queryAt(prometheus, symptomsFiring, resolvedAt);
    return { cutAt, restoredAt, resolvedAt, page, resolved, tail, atResolution, delivered: received(cutAt).filter((n) => n.path !== '/deadmansswitch') };
  }

  function expectOnlyTheRootCause(result: Awaited<ReturnType<typeof outage>>) {
    // Exactly the root cause, firing then resolved, on the pager; no symptom on any receiver, during
    // the outage, while the root cause kept firing after it, or once it resolved.
    expect(alertNamesIn(result.delivered)).toEqual([STORE_UNREACHABLE_ALERT]);
    expect(result.delivered.every((n) => n.path === '/pager')).toBe(true);
    expect(result.page.labels).toMatchObject({ severity: 'critical', service: 'holdfast', backend: 'postgres', signal: 'health' });
    expect(result.page.annotations.runbook_url).toBe(runbookUrl(TEST_CONFIG, STORE_UNREACHABLE_ALERT));
    expect(result.page.annotations.description).toMatch(/Holdfast server\(s\) on backend postgres have counted their store down \(lock_store_up = 0\)/);
    // The tail was real: symptoms still fired after the store came back (inhibited, since the root
    // cause kept firing), and had all resolved by the time the root cause did.
    expect(result.tail.map((s) => s.metric.alertname)).toContain(FAST_BURN_ALERT);
    expect(result.atResolution).toEqual([]);
    // keep_firing_for: the root cause resolved no sooner than 45 s after the store's return.
    expect(result.resolvedAt - result.restoredAt).toBeGreaterThanOrEqual(KEEP_FIRING_MS);
    for (const alert of result.resolved) expect(alert.annotations.runbook_url).toBe(runbookUrl(TEST_CONFIG, STORE_UNREACHABLE_ALERT));
  }

  function expectStoreEvents(since: number, until: number) {
    // The server said so in its log, in the C4 shape: store_down with its cause, store_up with how long.
    const contracts = readC4EventContracts();
    const events = server.logs.filter((line) => (line.event === 'store_down' || line.event === 'store_up') && (line.time as number) >= since && (line.time as number) <= until);
    expect(events.flatMap((line) => violationsOf(line, contracts))).toEqual([]);
    const down = events.find((line) => line.event === 'store_down');
    const up = events.findLast((line) => line.event === 'store_up');
    expect(down?.cause).toEqual(expect.any(String));
    expect((down?.cause as string).length).toBeGreaterThan(0);
    expect(up?.downMillis).toBeGreaterThan(0);
  }

  it('a refused store: one page with its runbook, the symptoms inhibited during the outage and on its tail, then resolved', async () => {
    explainOnFailure();
    const result = await outage(
      () => refusing.cut(),
      () => refusing.restore(),
    );
    process.stdout.write(`refused store (cut at +${((result.cutAt - start) / 1000).toFixed(1)} s):\n${describeNotifications(webhook.notifications, start)}\n`);
    expectOnlyTheRootCause(result);
    // PostgreSQL refusing is seen by both signals: the servers' health and the failing calls.
    expect(new Set(result.resolved.map((a) => a.labels.signal))).toEqual(new Set(['health', 'errors']));
    expectStoreEvents(result.cutAt, result.resolvedAt);
  }, 240_000);

  it('a hung store (connections accepted, nothing answered) pages the same way, from the servers\' health', async () => {
    explainOnFailure();
    const result = await outage(
      () => hole.blackhole(),
      () => hole.forward(),
    );
    process.stdout.write(`hung store (black hole at +${((result.cutAt - start) / 1000).toFixed(1)} s):\n${describeNotifications(webhook.notifications, start)}\n`);
    expectOnlyTheRootCause(result);
    expectStoreEvents(result.cutAt, result.resolvedAt);
    // Traffic really failed during the outages and succeeded around them.
    const answers = load!.statuses;
    expect(answers.get(200) ?? 0).toBeGreaterThan(50);
    expect(answers.get(503) ?? 0).toBeGreaterThan(20);
  }, 240_000);
});
