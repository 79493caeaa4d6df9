/**
 * One store outage against a real `holdfast server` process, measured the way
 * issue 20 pins it: an SDK workload writing to a fenced resource, a lock taken
 * before the outage, and a raw L4 prober that asks the server's own health
 * state before and after each L4 (/readyz: 503 at once while the state is down,
 * and a failed ping turns it down), so "an L4 sent while the state was down" is
 * known from the server, not guessed from clocks. (/metrics' `lock_store_up`
 * says the same, but rendering every metric twice per probe would load the
 * server the probe is timing.)
 *
 * The scenario returns figures and lists; the test file asserts on them.
 */
import { Worker } from 'node:worker_threads';
import { startWorkload, type Workload } from './fault-workload.js';
import { eventually, httpClient } from './http.js';
import type { ServerProcess } from './server-process.js';

export interface ProbeRecord {
  sentAt: number;
  status: number | 'failed';
  millis: number;
  /** /readyz answered 503 just before the L4 was sent and just after it was answered. */
  sentWhileDown: boolean;
}

export interface OutageReport {
  probes: ProbeRecord[];
  whileDown: ProbeRecord[];
  /** p99 of the answer times of the L4s sent while down (ms). */
  whileDownP99: number;
  slowestMillis: number;
  /** From the store's return to the first probe grant (ms), if any. */
  firstProbeGrantMillis: number | undefined;
  /** From the store's return to the first SDK workload grant (ms), if any. */
  firstWorkloadGrantMillis: number | undefined;
  /** The server said it was down at some point (lock_store_up 0 was read). */
  sawDown: boolean;
  keeper: string;
  keptBefore: { fencingToken: string };
  keptAfter: { held: boolean; sessionId?: string; fencingToken?: string };
  renewAfterStatus: number;
  readyWhileDown: { status: number; millis: number } | undefined;
  /** lock_store_up as exported during the outage and after the return. */
  gauge: { whileDown: boolean | undefined; after: boolean | undefined };
  workload: Workload;
  line: string;
}

/** `lock_store_up` as the server exports it (undefined when absent). */
export async function storeUp(url: string): Promise<boolean | undefined> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text(), () => '');
  const match = /^lock_store_up\{[^}]*\} (\S+)$/m.exec(text);
  return match ? match[1] === '1' : undefined;
}

export async function runStoreOutage(options: {
  server: ServerProcess;
  label: string;
  /** Starts the outage (stop PostgreSQL, black-hole the proxy). */
  breakStore: () => Promise<void> | void;
  /** How long the outage lasts once the server has seen it (ms). */
  downMillis: number;
  /** Ends the outage; resolves when the store answers again (the instant "the store returned"). */
  restoreStore: () => Promise<void> | void;
}): Promise<OutageReport> {
  const { server, label } = options;
  const api = httpClient(server.url);
  const keeper = (await api.openSession({ ttlMillis: 60_000, owner: 'keeper' })).body.sessionId as string;
  const keptBefore = (await api.acquire(`${label}/kept`, { sessionId: keeper, ttlMillis: 60_000 })).body as { fencingToken: string };

  const workload = startWorkload({
    urls: [server.url],
    workers: 4,
    keys: 2,
    keyPrefix: label,
    sessionTtlMillis: 15_000,
    lockTtlMillis: 10_000,
    workMillis: 10,
    acquireBudgetMillis: 3_000,
  });

  const probeSession = (await api.openSession({ ttlMillis: 60_000 })).body.sessionId as string;
  const probes: ProbeRecord[] = [];
  let sawDown = false;
  const prober = startProber({
    url: server.url,
    key: `${label}/probe`,
    sessionId: probeSession,
    sessionToken: api.sessionToken(probeSession)!,
    record: (probe) => {
      sawDown ||= probe.downBefore || probe.downAfter;
      probes.push({ sentAt: probe.sentAt, status: probe.status, millis: probe.millis, sentWhileDown: probe.downBefore && probe.downAfter });
    },
  });

  try {
    await eventually(async () => workload.grants.length >= 20, 60_000, 20);
    await options.breakStore();
    // The outage counts from the moment the server itself says the store is down (a hung store is
    // noticed only when a call outlives HOLDFAST_STORE_TIMEOUT_MS).
    await eventually(async () => sawDown, 60_000, 20);
    const readyStarted = performance.now();
    const ready = await fetch(`${server.url}/readyz`).then((r) => r.status, () => -1);
    const readyWhileDown = { status: ready, millis: performance.now() - readyStarted };
    const gaugeWhileDown = await storeUp(server.url);
    await new Promise((r) => setTimeout(r, options.downMillis));
    await options.restoreStore();
    const returnedAt = Date.now();
    const firstProbeGrant = await eventually(async () => probes.find((p) => p.sentAt >= returnedAt && p.status === 200), 30_000, 10).catch(
      () => undefined,
    );
    const firstWorkloadGrant = await eventually(async () => workload.firstGrantAfter(returnedAt), 30_000, 20).catch(() => undefined);
    // A little more traffic after the return, so late failures would show.
    const settled = probes.length;
    await eventually(async () => probes.length >= settled + 20, 30_000, 20);

    await prober.stop();
    await workload.stop();

    const gaugeAfter = await storeUp(server.url);
    const keptAfter = (await api.read(`${label}/kept`)).body as OutageReport['keptAfter'];
    const renewAfterStatus = (await api.renew(`${label}/kept`, { sessionId: keeper, fencingToken: keptBefore.fencingToken })).status;
    const whileDown = probes.filter((p) => p.sentWhileDown);
    const sorted = whileDown.map((p) => p.millis).sort((a, b) => a - b);
    const whileDownP99 = sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)]! : Number.NaN;
    const slowestMillis = Math.max(...probes.map((p) => p.millis));
    const statuses = new Map<string, number>();
    for (const p of probes) statuses.set(String(p.status), (statuses.get(String(p.status)) ?? 0) + 1);
    const firstProbeGrantMillis = firstProbeGrant ? firstProbeGrant.sentAt + firstProbeGrant.millis - returnedAt : undefined;
    const firstWorkloadGrantMillis = firstWorkloadGrant === undefined ? undefined : Math.round(firstWorkloadGrant - returnedAt);
    const line =
      `${label}: probe L4s ${JSON.stringify(Object.fromEntries(statuses))}; sent while down ${whileDown.length}, ` +
      `answered p50 ${sorted[Math.floor(sorted.length / 2)]?.toFixed(1)} ms p90 ${sorted[Math.floor(sorted.length * 0.9)]?.toFixed(1)} ms p99 ${whileDownP99.toFixed(1)} ms max ${sorted.at(-1)?.toFixed(1)} ms; ` +
      `slowest probe ${slowestMillis.toFixed(0)} ms; /readyz while down ${readyWhileDown.status} in ${readyWhileDown.millis.toFixed(1)} ms; ` +
      `first probe grant ${firstProbeGrantMillis === undefined ? 'NEVER' : `${firstProbeGrantMillis.toFixed(0)} ms`}, ` +
      `first workload grant ${firstWorkloadGrantMillis === undefined ? 'NEVER' : `${firstWorkloadGrantMillis} ms`} after the store returned; ` +
      `kept lock ${keptAfter.held ? `held, token ${keptAfter.fencingToken}` : 'NOT held'}, renew ${renewAfterStatus}; ${workload.summary()}`;
    return {
      probes,
      whileDown,
      whileDownP99,
      slowestMillis,
      firstProbeGrantMillis,
      firstWorkloadGrantMillis,
      sawDown,
      keeper,
      keptBefore,
      keptAfter,
      renewAfterStatus,
      readyWhileDown,
      gauge: { whileDown: gaugeWhileDown, after: gaugeAfter },
      workload,
      line,
    };
  } finally {
    await prober.stop();
    await workload.stop();
  }
}

/**
 * The raw L4 prober, on a worker thread of its own: the SDK workload's callbacks on the test's
 * event loop must not sit between an answer's arrival and its timestamp.
 */
const PROBER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { url, key, sessionId, sessionToken } = workerData;
const path = url + '/v1/locks/' + encodeURIComponent(key);
const headers = { 'content-type': 'application/json', authorization: 'Bearer ' + sessionToken };
let running = true;
parentPort.on('message', () => { running = false; });
const down = () => fetch(url + '/readyz').then((r) => r.arrayBuffer().then(() => r.status === 503), () => false);
(async () => {
  while (running) {
    const downBefore = await down();
    const sentAt = Date.now();
    const started = performance.now();
    let status = 'failed';
    let body;
    try {
      const response = await fetch(path + '/acquire', { method: 'POST', headers, body: JSON.stringify({ sessionId, ttlMillis: 1000 }) });
      body = await response.json();
      status = response.status;
    } catch {}
    const millis = performance.now() - started;
    const downAfter = await down();
    parentPort.postMessage({ sentAt, status, millis, downBefore, downAfter });
    if (status === 200) {
      await fetch(path + '/release', { method: 'POST', headers, body: JSON.stringify({ sessionId, fencingToken: body.fencingToken }) })
        .then((r) => r.arrayBuffer(), () => {});
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  parentPort.postMessage('stopped');
})();
`;

interface ProbeMessage {
  sentAt: number;
  status: number | 'failed';
  millis: number;
  downBefore: boolean;
  downAfter: boolean;
}

function startProber(options: { url: string; key: string; sessionId: string; sessionToken: string; record: (probe: ProbeMessage) => void }) {
  const worker = new Worker(PROBER_SOURCE, { eval: true, workerData: { url: options.url, key: options.key, sessionId: options.sessionId, sessionToken: options.sessionToken } });
  const stopped = new Promise<void>((resolve) => {
    worker.on('message', (message: ProbeMessage | 'stopped') => {
      if (message === 'stopped') resolve();
      else options.record(message);
    });
    worker.on('exit', () => resolve());
  });
  let stopping: Promise<void> | undefined;
  return {
    stop() {
      stopping ??= (async () => {
        worker.postMessage('stop');
        await stopped;
        await worker.terminate();
      })();
      return stopping;
    },
  };
}

/**
 * What issue 20 pins for every store outage: L4s sent while the server counted its store down are
 * answered 503 NOT_LEADER at once (p99 ≤ 50 ms: the answer needs no store call; a quiet machine
 * answers in 1–3 ms); the first grant comes within 1 s of the store's return (a quiet machine
 * needs ~100 ms: one probe interval and a ping); nothing overlaps, nothing fenced is refused, the
 * lock taken before the outage survives it, the SDK saw NOT_LEADER rather than unanswered requests.
 */
export function expectOutageHandled(
  report: OutageReport,
  server: ServerProcess,
  expect: typeof import('vitest').expect,
  /**
   * A hung store is noticed only when a call outlives HOLDFAST_STORE_TIMEOUT_MS: an SDK acquire whose
   * budget ends in that second was never answered, and its TransportError is the truth. A refused
   * store is answered at once, so there every SDK failure must be the server's NOT_LEADER.
   */
  unansweredBeforeDetection: 'allowed' | 'none' = 'none',
): void {
  expect(server.child.exitCode).toBeNull();
  expect(report.sawDown).toBe(true);
  expect(report.probes.filter((p) => p.status === 'failed')).toEqual([]);
  expect([...new Set(report.probes.map((p) => p.status))].filter((s) => s !== 200 && s !== 409 && s !== 503)).toEqual([]);
  expect(report.whileDown.length).toBeGreaterThan(0);
  expect(report.whileDown.filter((p) => p.status !== 503)).toEqual([]);
  expect(report.whileDownP99).toBeLessThanOrEqual(50);
  expect(report.readyWhileDown?.status).toBe(503);
  expect(report.gauge).toEqual({ whileDown: false, after: true });
  expect(report.firstProbeGrantMillis).toBeDefined();
  expect(report.firstProbeGrantMillis!).toBeLessThanOrEqual(1000);
  // The SDK workload resumes by itself (its retry backoff after 503s; ~0.1–0.7 s measured), bounded at 10 s.
  expect(report.firstWorkloadGrantMillis).toBeDefined();
  expect(report.firstWorkloadGrantMillis!).toBeLessThanOrEqual(10_000);
  // No probe L4 hangs: before the server sees the outage one waits at most for the store's own timeouts (~2 s).
  expect(report.slowestMillis).toBeLessThan(20_000);
  expect(report.keptAfter).toMatchObject({ held: true, sessionId: report.keeper, fencingToken: report.keptBefore.fencingToken });
  expect(report.renewAfterStatus).toBe(200);
  // One SDK request may go unanswered within the SDK's own timeout on a loaded machine: an L4 waiting on
  // the server rides the outage out to its deadline, and under load that answer can land after the
  // SDK's grace (run 2 of issue 20, one core busy: one such request, retried by the SDK). What callers
  // see is the SDK's error, and that is checked strictly.
  const sdkErrors = unansweredBeforeDetection === 'allowed' ? /^(NotLeaderError|TransportError)/ : /^NotLeaderError/;
  expect([...report.workload.requests.keys()].filter((k) => !/ (200|201|204|409|503|failed)$/.test(k))).toEqual([]);
  expect([...report.workload.errors.keys()].filter((e) => !sdkErrors.test(e))).toEqual([]);
  expect(report.workload.recorder.rejected).toEqual([]);
  expect(report.workload.overlaps()).toEqual([]);
}
