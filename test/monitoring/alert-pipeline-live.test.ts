/**
 * The whole alert pipeline, live: a Holdfast server on a real PostgreSQL
 * (reached through a TCP proxy the test can cut), a real Prometheus scraping
 * it with the generated rules (a test variant with short `for` durations,
 * rendered into a temp dir; the committed files are not touched), a real
 * Alertmanager with the generated route tree and inhibitions, and a webhook
 * receiver in the test. Under load the store goes away: exactly the root-cause
 * page must arrive, with its runbook URL, while the burn-rate alerts it causes
 * fire in Prometheus but are inhibited; after recovery the resolved
 * notification arrives.
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
import { eventually, httpClient } from '../support/http.js';
import { sharedPostgres } from '../support/server.js';
import { startPrometheus, type RunningPrometheus } from '../support/prometheus.js';
import { startServer, type TestServer } from '../support/server.js';
import { startAlertmanager, startWebhookReceiver, type Notification, type RunningAlertmanager, type WebhookReceiver } from './support/alertmanager.js';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.js';

/**
 * Production expressions and thresholds, test-sized waits: the root cause
 * waits 2 s, every symptom longer, so the root cause reaches Alertmanager
 * first, as with the production `for` values (1 m against 2 m and more).
 */
const TEST_CONFIG = resolveConfig({
  for: Object.fromEntries(Object.keys(DEFAULT_CONFIG.for).map((name) => [name, name === STORE_UNREACHABLE_ALERT ? '2s' : '20s'])),
  thresholds: { storeErrorWindow: '10s' },
  slo: { burnTiers: DEFAULT_CONFIG.slo.burnTiers.map((tier) => ({ ...tier, for: '8s' })) },
  alertmanager: { groupWait: '1s', groupInterval: '2s', repeatInterval: '1h', watchdogRepeatInterval: '1m' },
});
const AM_GROUP_INTERVAL_MS = 2_000;
const INTERVAL = '1s';

/** Acquire/release traffic from a few sessions, paced, until stopped; failures are counted, not thrown. */
function startLoad(server: TestServer, workers = 4) {
  const api = httpClient(server.url);
  const statuses = new Map<number, number>();
  let running = true;
  const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
  const worker = async (index: number) => {
    // The longest session TTL the server allows: the sessions outlive the outage without heartbeats.
    const opened = await api.openSession({ ttlMillis: 300_000, owner: `pipeline-load-${index}` });
    if (opened.status !== 201) throw new Error(`load: could not open a session: ${opened.status} ${JSON.stringify(opened.body)}`);
    const sessionId = opened.body.sessionId as string;
    while (running) {
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
          `${a.status.padEnd(8)} ${a.labels.alertname} {severity=${a.labels.severity}, backend=${a.labels.backend}}`,
        )
        .join('\n'),
    )
    .join('\n');
}

describe('alert pipeline: a PostgreSQL outage under load pages once, with its cause', () => {
  let proxy: TcpProxy;
  let server: TestServer;
  let webhook: WebhookReceiver;
  let alertmanager: RunningAlertmanager;
  let prometheus: RunningPrometheus;
  let load: ReturnType<typeof startLoad> | undefined;

  beforeAll(async () => {
    const cluster = await sharedPostgres();
    const database = new URL(await cluster.createDatabase());
    proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(database.port) });
    database.port = String(proxy.port);
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
  }, 120_000);

  afterAll(async () => {
    await load?.stop();
    await prometheus?.stop();
    await alertmanager?.stop();
    await webhook?.close();
    await proxy?.restore();
    await server?.stop();
    await proxy?.close();
  }, 60_000);

  it('delivers the store-unreachable page with its runbook, inhibits the burn-rate alerts, then resolves', async () => {
    const start = Date.now();
    onTestFailed(async () => {
      process.stdout.write(
        `notifications so far:\n${describeNotifications(webhook.notifications, start)}\n` +
          `alertmanager holds: ${JSON.stringify((await alertmanager.alerts()).map((a) => [a.labels.alertname, a.status.state]))}\n` +
          `load answers: ${JSON.stringify(Object.fromEntries(load?.statuses ?? []))}\n` +
          `store calls/s: ${JSON.stringify((await prometheus.query('sum by (outcome) (rate(lock_store_seconds_count[10s]))')).map((x) => [x.metric.outcome, x.value[1]]))}\n` +
          `acquire rate: ${JSON.stringify((await prometheus.query('holdfast:slo_requests:rate5m')).map((x) => [x.metric.route, x.value[1]]))}\n` +
          `up: ${JSON.stringify((await prometheus.query('up')).map((x) => x.value[1]))}\n` +
          `prometheus alerts: ${JSON.stringify((await prometheus.query('ALERTS')).map((a) => [a.metric.alertname, a.metric.alertstate]))}\n` +
          `prometheus alertmanagers: ${JSON.stringify(await (await fetch(`${prometheus.url}/api/v1/alertmanagers`)).json())}\n` +
          `alertmanager log:\n${alertmanager.output.join('')}\nprometheus log:\n${prometheus.output.join('')}\n`,
      );
    });
    const received = (path: string, since = 0) => webhook.notifications.filter((n) => n.path === path && n.receivedAt >= since);

    // The pipeline works before anything breaks: the watchdog reaches the dead-man's switch, nothing pages.
    await prometheus.until(`up{job="${HOLDFAST_JOB}"} == 1`);
    load = startLoad(server);
    await eventually(async () => alertNamesIn(received('/deadmansswitch')).includes(WATCHDOG_ALERT), 30_000, 200);
    // Healthy traffic reaches the SLO windows first: a 0 error ratio is a value, not "no data".
    await prometheus.until(`holdfast:slo_errors:ratio_rate5m{backend="postgres"} == 0`);
    expect(received('/pager')).toEqual([]);

    // ── Outage: PostgreSQL becomes unreachable under load.
    const cutAt = Date.now();
    await proxy.cut();

    const page = await eventually(
      async () =>
        received('/pager', cutAt)
          .flatMap((n) => n.alerts)
          .find((a) => a.labels.alertname === STORE_UNREACHABLE_ALERT && a.status === 'firing'),
      60_000,
      200,
    );
    expect(page.labels).toMatchObject({ severity: 'critical', service: 'holdfast', backend: 'postgres' });
    expect(page.annotations.runbook_url).toBe(runbookUrl(TEST_CONFIG, STORE_UNREACHABLE_ALERT));
    expect(page.annotations.description).toMatch(/of store calls on backend postgres failed/);

    // The symptoms really fire in Prometheus, and Alertmanager holds them as suppressed by the root cause.
    for (const symptom of [FAST_BURN_ALERT, SLOW_BURN_ALERT]) {
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
    const duringOutage = webhook.notifications.filter((n) => n.receivedAt >= cutAt && n.path !== '/deadmansswitch');

    // ── Recovery.
    const restoredAt = Date.now();
    await proxy.restore();
    const resolved = await eventually(
      async () =>
        received('/pager', restoredAt)
          .flatMap((n) => n.alerts)
          .find((a) => a.labels.alertname === STORE_UNREACHABLE_ALERT && a.status === 'resolved'),
      90_000,
      200,
    );
    await load.stop();
    const answers = load.statuses;

    process.stdout.write(
      `alert pipeline (outage at +${((cutAt - start) / 1000).toFixed(1)} s, store back at +${((restoredAt - start) / 1000).toFixed(1)} s; ` +
        `load answers ${JSON.stringify(Object.fromEntries(answers))}):\n${describeNotifications(webhook.notifications, start)}\n`,
    );

    // Exactly the root-cause page during the outage; none of the inhibited symptoms, on any receiver.
    expect(alertNamesIn(duringOutage)).toEqual([STORE_UNREACHABLE_ALERT]);
    expect(duringOutage.every((n) => n.path === '/pager')).toBe(true);
    expect(duringOutage.flatMap((n) => n.alerts).filter((a) => (STORE_OUTAGE_SYMPTOMS as readonly string[]).includes(a.labels.alertname!))).toEqual([]);
    expect(resolved.annotations.runbook_url).toBe(runbookUrl(TEST_CONFIG, STORE_UNREACHABLE_ALERT));
    expect(new Date(resolved.endsAt).getTime()).toBeGreaterThanOrEqual(restoredAt - 1_000);
    // Traffic really failed during the outage and succeeded around it.
    expect(answers.get(200) ?? 0).toBeGreaterThan(50);
    expect([...answers].filter(([status]) => status >= 500).reduce((n, [, c]) => n + c, 0)).toBeGreaterThan(20);
  }, 300_000);
});
