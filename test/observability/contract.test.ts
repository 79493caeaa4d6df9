/**
 * The C4 contract test: drive every L/A route through real outcomes on a real
 * server, then read /metrics as Prometheus would and the log stream as a log
 * pipeline would, and hold both to the pinned contract.
 *
 * Metric expectations are a ledger the test writes from the answers it got;
 * every series the ledger does not name must not have moved at all.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { METRIC_SPECS, lockKindOf, type MetricSpec } from '../../contract/metric-table.js';
import type { LockStore, ReleaseWaiter } from '../../lock/store/spi.js';
import { eventually, httpClient, type Answer } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { STORES } from '../support/stores.js';
import { readC4EventContracts, violationsOf } from './support/c4-events.js';
import { countsOf, deltasOf, scrape, seriesId, type Scrape } from './support/scrape.js';

/** The lock_* families; the build-info metric has one series of build labels instead of closed sets. */
const SERVER_SPECS = METRIC_SPECS.filter((spec) => spec.emitter === 'server' && !spec.buildLabels);
const BUILD_INFO = METRIC_SPECS.find((spec) => spec.buildLabels)!;
const PARSER_TYPE = { counter: 'COUNTER', gauge: 'GAUGE', histogram: 'HISTOGRAM' } as const;
/** The counters and histogram counts whose every series the ledger accounts for. */
const EXACT = [
  'lock_acquire_seconds',
  'lock_release_total',
  'lock_renew_total',
  'lock_wait_seconds',
  'lock_contention_total',
  'lock_session_expired_total',
  'lock_force_revoke_total',
  'lock_heartbeat_total',
];

/** Expected movements: metric → series → count, for the series the test caused. */
/** The label names a metric of the table carries. */
const SERIES_LABELS = (name: string) => METRIC_SPECS.find((spec) => spec.name === name)?.labels ?? {};

class Ledger {
  private readonly counts = new Map<string, Map<string, number>>();
  constructor(private readonly backend: string) {}
  add(metric: string, labels: Record<string, string>, by = 1) {
    const series = this.counts.get(metric) ?? new Map<string, number>();
    // v3's `kind` label: every grant this walk asks for is a mutex unless it says otherwise.
    const kind: Record<string, string> = 'kind' in SERIES_LABELS(metric) && labels.kind === undefined ? { kind: 'mutex' } : {};
    const id = seriesId({ ...kind, ...labels, backend: this.backend });
    series.set(id, (series.get(id) ?? 0) + by);
    this.counts.set(metric, series);
  }
  expected(metric: string, id: string): number {
    return this.counts.get(metric)?.get(id) ?? 0;
  }
  total(metric: string): number {
    return [...(this.counts.get(metric)?.values() ?? [])].reduce((a, b) => a + b, 0);
  }
}

function expectAnswer(answer: Answer, status: number, code?: string) {
  expect({ status: answer.status, code: answer.body?.error?.code }).toEqual({ status, code });
  return answer;
}

/** Every label name, value set and series count of one family against its spec. */
function checkFamily(result: Scrape, spec: MetricSpec, backend: string) {
  const family = result.families.get(spec.name);
  expect(family, `${spec.name} missing from /metrics`).toBeDefined();
  expect(family!.type).toBe(PARSER_TYPE[spec.type]);
  expect(family!.help).toBe(spec.help);
  const labelNames = Object.keys(spec.labels).sort();
  const seen = new Set<string>();
  for (const sample of family!.series) {
    const labels = sample.labels;
    expect(Object.keys(labels).sort(), `${spec.name} label names`).toEqual(labelNames);
    for (const [name, value] of Object.entries(labels)) {
      expect(spec.labels[name], `${spec.name}{${name}="${value}"}`).toContain(value);
    }
    expect(labels.backend).toBe(backend);
    if (spec.type === 'histogram') {
      expect([...sample.buckets!.keys()].sort((x, y) => x - y)).toEqual([...spec.buckets!, Infinity]);
      expect(sample.count).toBe(sample.buckets!.get(Infinity));
    }
    seen.add(seriesId(labels));
  }
  // Every combination of the closed sets exists (zero-initialised), for this instance's backend.
  const combinations = Object.entries(spec.labels)
    .filter(([name]) => name !== 'backend')
    .reduce((n, [, values]) => n * values.length, 1);
  expect(seen.size, `${spec.name} series`).toBe(combinations);
}

describe.each(STORES)('C4 contract on %s', (storeName) => {
  let server: TestServer;
  let api: ReturnType<typeof httpClient>;
  let first: Scrape;

  beforeAll(async () => {
    server = await startServer({
      store: storeName,
      // A small per-session contention budget so `exceeded` takes three requests, not a hundred.
      env: { HOLDFAST_CONTENTION_PER_SESSION: '1', HOLDFAST_CONTENTION_PER_SESSION_BURST: '2' },
    });
    api = httpClient(server.url);
    first = await scrape(server.url);
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('the first scrape has every pinned series, zero-initialised, with exactly the pinned labels', () => {
    for (const spec of SERVER_SPECS) checkFamily(first, spec, server.backend);
    const lockFamilies = [...first.families.keys()].filter((name) => name.startsWith('lock_')).sort();
    expect(lockFamilies).toEqual(SERVER_SPECS.map((s) => s.name).sort());
    for (const name of EXACT) for (const value of countsOf(first, name).values()) expect(value).toBe(0);
    // One build-info series, value 1, naming this process's versions.
    const buildInfo = first.families.get(BUILD_INFO.name);
    expect(buildInfo?.help).toBe(BUILD_INFO.help);
    expect(buildInfo?.series.map((s) => ({ labels: s.labels, value: s.value }))).toEqual([
      { labels: { version: expect.stringMatching(/^\d+\.\d+\.\d+/), node_version: process.version }, value: 1 },
    ]);
    // prom-client's process and Node.js defaults are on the page too.
    expect(first.families.has('process_cpu_seconds_total')).toBe(true);
    expect(first.families.has('nodejs_eventloop_lag_seconds')).toBe(true);
  });

  test('every L/A route through every outcome: exact counter deltas and the pinned log events', async () => {
    const ledger = new Ledger(server.backend);
    const admin = api.admin(server.operatorToken);
    const viewer = api.admin(server.viewerToken);
    const before = await scrape(server.url);
    const logStart = server.logs.length;
    const key = (name: string) => `contract/${storeName}/${name}`;
    const open = async (owner: string, ttlMillis = 120_000) =>
      (expectAnswer(await api.openSession({ owner, ttlMillis }), 201).body as { sessionId: string }).sessionId;
    const acquire = async (k: string, body: Record<string, unknown>, status: number, code: string | undefined, outcome: string) => {
      const answer = expectAnswer(await api.acquire(k, body), status, code);
      ledger.add('lock_acquire_seconds', { outcome, kind: lockKindOf(body as { mode?: string; limit?: number }) });
      return answer;
    };

    // Session expiry by ttl first: the sweeper needs its TTL to pass while the rest runs. 5 s, not the
    // 1 s minimum: the acquire below must land while it lives on however busy a machine.
    const lapsing = await open('owner-lapsing', 5_000);
    await acquire(key('lapsing'), { sessionId: lapsing }, 200, undefined, 'granted');
    ledger.add('lock_session_expired_total', { cause: 'ttl' });

    // L1, L2, L4 granted, and the holder's retried L4 (same grant, counted granted again).
    const a = await open('owner-a');
    expectAnswer(await api.heartbeat(a), 200);
    ledger.add('lock_heartbeat_total', { outcome: 'alive' });
    const k1 = key('k1');
    const grant = (await acquire(k1, { sessionId: a }, 200, undefined, 'granted')).body as { fencingToken: string };
    await acquire(k1, { sessionId: a }, 200, undefined, 'granted');
    // L7 read.
    expect(expectAnswer(await api.read(k1), 200).body.held).toBe(true);

    // Contended, then a spent budget (burst 2): 409, 409, 429.
    const b = await open('owner-b');
    for (let i = 0; i < 2; i++) await acquire(k1, { sessionId: b }, 409, 'LOCK_CONTENDED', 'contended');
    ledger.add('lock_contention_total', { reason: 'contended' }, 2);
    await acquire(k1, { sessionId: b }, 429, 'CONTENTION_EXCEEDED', 'contention_exceeded');
    ledger.add('lock_contention_total', { reason: 'exceeded' });

    // Invalid input and unknown sessions.
    await acquire(k1, { sessionId: a, ttlMillis: '15000' }, 400, 'VALIDATION_FAILED', 'invalid');
    await acquire(k1, { sessionId: 's_unknownsession0000000000' }, 404, 'SESSION_NOT_FOUND', 'session_not_found');

    // L5: renewed, lost, invalid.
    expectAnswer(await api.renew(k1, { sessionId: a, fencingToken: grant.fencingToken }), 200);
    ledger.add('lock_renew_total', { outcome: 'renewed' });
    expectAnswer(await api.renew(k1, { sessionId: a, fencingToken: '999999999' }), 409, 'LOCK_LOST');
    ledger.add('lock_renew_total', { outcome: 'lost' });
    expectAnswer(await api.renew(k1, { sessionId: a, fencingToken: 'abc' }), 400, 'VALIDATION_FAILED');
    ledger.add('lock_renew_total', { outcome: 'invalid' });

    // L6: lost, invalid, released.
    expectAnswer(await api.release(k1, { sessionId: a, fencingToken: '999999999' }), 409, 'LOCK_LOST');
    ledger.add('lock_release_total', { outcome: 'lost' });
    expectAnswer(await api.release(k1, { sessionId: a }), 400, 'VALIDATION_FAILED');
    ledger.add('lock_release_total', { outcome: 'invalid' });
    expectAnswer(await api.release(k1, { sessionId: a, fencingToken: grant.fencingToken }), 200);
    ledger.add('lock_release_total', { outcome: 'released' });

    // Server-side wait ended by a release.
    const k2 = key('k2');
    const k2Grant = (await acquire(k2, { sessionId: a }, 200, undefined, 'granted')).body as { fencingToken: string };
    const waiterC = await open('owner-c');
    const waiting = api.acquire(k2, { sessionId: waiterC, waitMillis: 20_000 });
    await eventually(async () => (await api.read(k2)).body.waiterCount === 1);
    expectAnswer(await api.release(k2, { sessionId: a, fencingToken: k2Grant.fencingToken }), 200);
    ledger.add('lock_release_total', { outcome: 'released' });
    const waitedGrant = expectAnswer(await waiting, 200).body as { fencingToken: string };
    ledger.add('lock_acquire_seconds', { outcome: 'granted' });
    ledger.add('lock_wait_seconds', { outcome: 'released' });

    // Server-side wait that runs out: contended at the deadline.
    const k3 = key('k3');
    await acquire(k3, { sessionId: a }, 200, undefined, 'granted');
    const waiterD = await open('owner-d');
    await acquire(k3, { sessionId: waiterD, waitMillis: 300 }, 409, 'LOCK_CONTENDED', 'contended');
    ledger.add('lock_wait_seconds', { outcome: 'deadline' });
    ledger.add('lock_contention_total', { reason: 'contended' });

    // v3 kinds, each counted under its own `kind`: a semaphore permit, a limit its holders do not
    // name (LIMIT_MISMATCH: the caller's mistake, `invalid`), and a shared grant.
    const pool = key('pool');
    const permit = (await acquire(pool, { sessionId: a, limit: 2 }, 200, undefined, 'granted')).body as { fencingToken: string };
    await acquire(pool, { sessionId: waiterD, limit: 3 }, 409, 'LIMIT_MISMATCH', 'invalid');
    await acquire(pool, { sessionId: waiterD, mode: 'shared' }, 409, 'LIMIT_MISMATCH', 'invalid');
    expectAnswer(await api.release(pool, { sessionId: a, fencingToken: permit.fencingToken }), 200);
    ledger.add('lock_release_total', { outcome: 'released' });
    await acquire(key('readers'), { sessionId: a, mode: 'shared' }, 200, undefined, 'granted');
    await acquire(key('readers'), { sessionId: waiterD, mode: 'shared' }, 200, undefined, 'granted');

    // A wait-for cycle (SQL stores keep fleet-wide wait state and break it): the younger wait is
    // answered 409 DEADLOCK_DETECTED (outcome contended, its wait aborted); the older is granted
    // once the victim lets go.
    if (storeName !== 'etcd') {
      const f = await open('owner-f');
      const g = await open('owner-g');
      await acquire(key('dl-f'), { sessionId: f }, 200, undefined, 'granted');
      const gHeld = (await acquire(key('dl-g'), { sessionId: g }, 200, undefined, 'granted')).body as { fencingToken: string };
      const older = api.acquire(key('dl-g'), { sessionId: f, waitMillis: 20_000 });
      await eventually(async () => (await api.read(key('dl-g'))).body.waiterCount === 1);
      await acquire(key('dl-f'), { sessionId: g, waitMillis: 20_000 }, 409, 'DEADLOCK_DETECTED', 'contended');
      ledger.add('lock_wait_seconds', { outcome: 'aborted' });
      expectAnswer(await api.release(key('dl-g'), { sessionId: g, fencingToken: gHeld.fencingToken }), 200);
      ledger.add('lock_release_total', { outcome: 'released' });
      expectAnswer(await older, 200);
      ledger.add('lock_acquire_seconds', { outcome: 'granted' });
      ledger.add('lock_wait_seconds', { outcome: 'released' });
    }

    // Server-side wait the caller abandons: no answer, so no L4 observation; the wait is aborted.
    const waiterE = await open('owner-e');
    const abandon = new AbortController();
    const abandoned = fetch(`${server.url}/v1/locks/${encodeURIComponent(k3)}/acquire`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${api.sessionToken(waiterE)}` },
      body: JSON.stringify({ sessionId: waiterE, waitMillis: 20_000 }),
      signal: abandon.signal,
    }).catch((error: Error) => error);
    await eventually(async () => (await api.read(k3)).body.waiterCount === 1);
    abandon.abort();
    expect(await abandoned).toBeInstanceOf(Error);
    ledger.add('lock_wait_seconds', { outcome: 'aborted' });
    await eventually(async () => (await api.read(k3)).body.waiterCount === 0);

    // A3 force-revoke: revoked, not_held, token_mismatch.
    expect(expectAnswer(await admin.revoke(k3, { reason: 'contract: stuck' }), 200).body.outcome).toBe('REVOKED');
    expect(expectAnswer(await admin.revoke(key('free'), { reason: 'contract: free' }), 200).body.outcome).toBe('NOT_HELD');
    const k4 = key('k4');
    await acquire(k4, { sessionId: a }, 200, undefined, 'granted');
    expect(
      expectAnswer(await admin.revoke(k4, { reason: 'contract: stale', expectedFencingToken: '1' }), 200).body.outcome,
    ).toBe('TOKEN_MISMATCH');
    for (const outcome of ['revoked', 'not_held', 'token_mismatch']) ledger.add('lock_force_revoke_total', { outcome });

    // A lock's own TTL lapses while its session lives.
    const shortLived = key('short');
    await acquire(shortLived, { sessionId: a, ttlMillis: 1000 }, 200, undefined, 'granted');

    // Session ends: closed (L3) and killed (A6), each holding a lock.
    const closing = await open('owner-closing');
    await acquire(key('closing'), { sessionId: closing }, 200, undefined, 'granted');
    expectAnswer(await api.closeSession(closing), 204);
    ledger.add('lock_session_expired_total', { cause: 'closed' });
    // A heartbeat of the ended session: 404, counted, and no log line.
    expectAnswer(await api.heartbeat(closing), 404, 'SESSION_NOT_FOUND');
    ledger.add('lock_heartbeat_total', { outcome: 'session_not_found' });
    const killed = await open('owner-killed');
    await acquire(key('killed'), { sessionId: killed }, 200, undefined, 'granted');
    expect(expectAnswer(await admin.kill(killed, { reason: 'contract: runaway' }), 200).body.outcome).toBe('KILLED');
    ledger.add('lock_session_expired_total', { cause: 'killed' });

    // Viewer routes A1, A2, A4, A5.
    expectAnswer(await viewer.listLocks('?prefix=contract/'), 200);
    expectAnswer(await viewer.listSessions(), 200);
    expectAnswer(await viewer.audit(), 200);
    expectAnswer(await viewer.summary(), 200);

    // The sweeper's work: the lapsed session and the lapsed lock.
    const logs = () => server.logs.slice(logStart);
    await eventually(async () =>
      logs().some((l) => l.event === 'session_expired' && l.sessionId === lapsing && l.cause === 'ttl') &&
      logs().some((l) => l.event === 'lock_expired' && l.key === shortLived && l.cause === 'ttl'),
    );

    // ---- metrics: exactly what the ledger says, nothing else moved ----
    const after = await scrape(server.url);
    for (const spec of SERVER_SPECS) checkFamily(after, spec, server.backend);
    for (const name of EXACT) {
      const deltas = deltasOf(before, after, name);
      expect(deltas.size).toBeGreaterThan(0);
      for (const [id, delta] of deltas) expect({ name, id, delta }).toEqual({ name, id, delta: ledger.expected(name, id) });
      expect([...deltas.values()].reduce((x, y) => x + y, 0)).toBe(ledger.total(name));
    }

    // ---- logs: every pinned event appeared, every line is in the contract ----
    const contracts = readC4EventContracts();
    const lines = logs();
    const problems = lines.flatMap((line) => violationsOf(line, contracts));
    expect(problems).toEqual([]);
    const emitted = new Set(lines.map((l) => l.event));
    // wait_fallback needs a failing wake mechanism (its own test); etcd breaks no deadlocks (no fleet-wide wait state).
    const pinnedButWait = [...contracts.events.values()].filter(
      (c) => c.section === 'pinned' && c.event !== 'wait_fallback' && !(storeName === 'etcd' && c.event === 'deadlock_detected'),
    );
    for (const { event } of pinnedButWait) expect(emitted, `no ${event} line`).toContain(event);
    // The values the scenario caused, each seen.
    const seen = (event: string, field: string) => new Set(lines.filter((l) => l.event === event).map((l) => l[field]));
    expect(seen('lock_contended', 'reason')).toEqual(new Set(['contended', 'exceeded']));
    expect(seen('lock_lost', 'op')).toEqual(new Set(['renew', 'release']));
    expect(seen('session_expired', 'cause')).toEqual(new Set(['ttl', 'closed', 'killed']));
    expect(seen('lock_expired', 'cause')).toEqual(new Set(['ttl', 'session_ttl', 'session_closed', 'session_killed']));
    expect(seen('lock_force_revoked', 'outcome')).toEqual(new Set(['REVOKED', 'NOT_HELD', 'TOKEN_MISMATCH']));
    // One lock_granted per new grant: the holder's retried L4 emits none; a grant after a server-side wait
    // (handed over on the SQL stores, taken by a woken try on etcd) is announced like any other.
    expect(lines.filter((l) => l.event === 'lock_granted' && l.key === k1)).toHaveLength(1);
    expect(lines.filter((l) => l.event === 'lock_granted' && l.key === k2).map((l) => [l.sessionId, l.fencingToken])).toEqual([
      [a, k2Grant.fencingToken],
      [waiterC, waitedGrant.fencingToken],
    ]);
    // Nobody's mistake became a 500: a caller that went away is not a server failure.
    expect(emitted.has('request_failed')).toBe(false);
    // Request-scoped lines carry the request id the server answered with.
    expect(lines.filter((l) => l.event === 'lock_granted').every((l) => typeof l.requestId === 'string' && l.requestId !== '')).toBe(true);
  });
});

describe('C4 contract: release-watch fallback', () => {
  let fallbackServer: TestServer;
  afterAll(async () => {
    await fallbackServer?.stop();
  });

  test('a failed release watch: wait_fallback is logged and the wait is observed as fallback', async () => {
    // The store wrapper gives the server a ReleaseWaiter whose mechanism always fails, as a
    // compacted etcd watch would; core must poll for the rest of the budget and say so.
    fallbackServer = await startServer({ store: 'embedded', wrapStore: withFailingReleaseWatch });
    const fallbackApi = httpClient(fallbackServer.url);
    const before = await scrape(fallbackServer.url);
    const holder = (await fallbackApi.openSession({ owner: 'holder' })).body.sessionId as string;
    const waiter = (await fallbackApi.openSession({ owner: 'waiter' })).body.sessionId as string;
    const k = 'contract/fallback';
    expectAnswer(await fallbackApi.acquire(k, { sessionId: holder }), 200);
    // A budget far above a first try and a wait record on a busy machine: the wait must reach the (failing) watch.
    expectAnswer(await fallbackApi.acquire(k, { sessionId: waiter, waitMillis: 3_000 }), 409, 'LOCK_CONTENDED');
    const after = await scrape(fallbackServer.url);

    const waits = deltasOf(before, after, 'lock_wait_seconds');
    expect(waits.get(seriesId({ backend: 'embedded', outcome: 'fallback' }))).toBe(1);
    expect([...waits.values()].reduce((x, y) => x + y, 0)).toBe(1);
    const contracts = readC4EventContracts();
    const fallbackLines = fallbackServer.logs.filter((l) => l.event === 'wait_fallback');
    expect(fallbackLines).toHaveLength(1);
    expect(fallbackLines[0]).toMatchObject({ key: k, cause: 'injected: watch compacted' });
    expect(fallbackServer.logs.flatMap((line) => violationsOf(line, contracts))).toEqual([]);
  });
});

function withFailingReleaseWatch(store: LockStore): LockStore {
  const waiter: ReleaseWaiter = {
    async waitForRelease() {
      return { outcome: 'fallback', cause: 'injected: watch compacted' };
    },
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'releaseWaiter') return waiter;
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
