/**
 * `npm run bench:scale` — issue 16: the steady load of a lock service is heartbeats.
 *
 * On a throwaway PostgreSQL with real `holdfast server` child processes (default settings):
 * 1. Acceptance: one instance, 128 closed-loop callers heartbeating through HTTP, against the raw
 *    backend doing one UPDATE per heartbeat (a `pg` pool of 128) in the same run.
 * 2. Scale: sessions heartbeating at TTL/3 (open loop, latency from the scheduled instant, so a
 *    server falling behind shows), half of them holding a lock, with acquire/release churn beside;
 *    steps of sessions give the plot of heartbeat p99 against sessions. The target (100,000
 *    sessions, 50,000 locks) is scaled down to what this machine sustains (0.6 x the measured
 *    closed-loop rate x TTL/3) and the table says so.
 * 3. An expiry storm: 10,000 sessions (half with a lock) stop heartbeating at once; the time from
 *    their expiry until the sweeper has ended them all, and the churn's acquire p99 meanwhile.
 * 4. Server RSS, /metrics time, A1 (GET /v1/admin/locks) first page time at that state.
 * 5. Two instances on the same PostgreSQL: the paced load split over both, and their closed-loop rate.
 * 6. etcd (one local node): one instance, sessions opened over HTTP, closed-loop heartbeats.
 * Two diagnostic rows split the acceptance gap: the raw work on the server's pool size (16), and
 * the store's batched heartbeat called in-process (no HTTP).
 *
 * Knobs: SCALE_SESSIONS (100000), SCALE_LOCKS (50000), SCALE_TTL_MS (15000), SCALE_CALLERS (128),
 * SCALE_STEP_SECONDS (8), SCALE_STORM_SESSIONS (10000). Writes bench/results/scale.md and
 * bench/results/scale-heartbeat-p99.png (PNG drawn by bench/lib/png-plot.ts with node:zlib).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEtcd } from '../test/support/etcd.js';
import { startPostgres, type PostgresCluster } from '../test/support/postgres.js';
import { PgDatabase } from '../lock/store/sql/pg-database.js';
import { SqlLockStore } from '../lock/store/sql/sql-store.js';
import { spawnServer, type ServerProcess } from '../test/support/server-process.js';
import { LeanHttpConnection } from './lib/lean-http.js';
import { linePlotPng } from './lib/png-plot.js';
import { percentile } from './lib/stats.js';

const num = (name: string, fallback: number) => {
  const raw = process.env[name];
  const value = raw ? Number(raw) : fallback;
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${raw}`);
  return value;
};
const TARGET_SESSIONS = num('SCALE_SESSIONS', 100_000);
const TARGET_LOCKS = num('SCALE_LOCKS', 50_000);
const TTL = num('SCALE_TTL_MS', 15_000);
const CALLERS = num('SCALE_CALLERS', 128);
const STEP_SECONDS = num('SCALE_STEP_SECONDS', 8);
const STORM = num('SCALE_STORM_SESSIONS', 10_000);
const PERIOD = TTL / 3;
const RESULTS = path.resolve(import.meta.dirname, 'results');
const VIEWER_TOKEN = 'scale-bench-viewer-token-0123456789';

const startedAt = Date.now();
const load = () => os.loadavg().map((l) => l.toFixed(1)).join(' ');
const log = (line: string) => console.log(`[${((Date.now() - startedAt) / 1000).toFixed(0)}s, load ${load()}] ${line}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tokenOf = (id: string) => `tok-${id}`;
const hashOf = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');
const rssMb = (server: ServerProcess) =>
  Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))![1]) / 1024);
const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : 'n/a');

interface Window {
  latencies: number[];
  failures: number;
  startedAt: number;
  /** Set when the measurement ends, so a rate read later is still over the measured span. */
  endedAt?: number;
}
const newWindow = (): Window => ({ latencies: [], failures: 0, startedAt: performance.now() });
const closed = (w: Window): Window => ({ ...w, endedAt: performance.now() });
const rateOf = (w: Window) => w.latencies.length / (((w.endedAt ?? performance.now()) - w.startedAt) / 1000);
const p99 = (w: Window) => percentile([...w.latencies].sort((a, b) => a - b), 99);

/** Sessions (and every other one's lock) written straight into the store, with tokens the bench knows. */
async function seedSessions(db: pg.Pool, prefix: string, from: number, to: number, ttlMillis: number, withLocks: boolean) {
  if (to <= from) return;
  await db.query(
    `INSERT INTO holdfast_sessions (session_id, owner, ttl_millis, created_at, last_heartbeat_at, expires_at, token_hash)
     SELECT $1 || i, 'scale', $4::integer, holdfast_now_ms(), holdfast_now_ms(), holdfast_now_ms() + $4::integer,
            encode(sha256(convert_to('tok-' || $1 || i, 'UTF8')), 'hex')
     FROM generate_series($2::integer, $3::integer - 1) AS i`,
    [prefix, from, to, ttlMillis],
  );
  if (withLocks) {
    await db.query(
      `INSERT INTO holdfast_locks (key, session_id, owner, fencing_token, ttl_millis, granted_at, expires_at)
       SELECT 'held/' || $1 || i, $1 || i, 'scale', nextval('holdfast_fencing_seq'), 300000, holdfast_now_ms(), holdfast_now_ms() + 300000
       FROM generate_series($2::integer, $3::integer - 1) AS i WHERE i % 2 = 0`,
      [prefix, from, to],
    );
  }
}

async function connections(urls: string[], count: number): Promise<LeanHttpConnection[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => LeanHttpConnection.open(urls[i % urls.length]!)));
}

/** `callers` closed-loop heartbeaters, round-robin over sessions `prefix`0..n-1. */
async function closedLoopHeartbeats(urls: string[], prefix: string, n: number, seconds: number): Promise<Window> {
  const pool = await connections(urls, CALLERS);
  const window = newWindow();
  const until = performance.now() + seconds * 1000;
  let next = 0;
  await Promise.all(
    pool.map(async (c) => {
      while (performance.now() < until) {
        const id = `${prefix}${next++ % n}`;
        const t0 = performance.now();
        const answer = await c.request('POST', `/v1/sessions/${id}/heartbeat`, {}, tokenOf(id));
        if (answer.status === 200) window.latencies.push(performance.now() - t0);
        else window.failures++;
      }
    }),
  );
  pool.forEach((c) => c.close());
  return closed(window);
}

/** The raw backend: one UPDATE per heartbeat, `callers` at once on a pool as large. */
async function rawHeartbeats(databaseUrl: string, prefix: string, n: number, seconds: number, poolSize = CALLERS): Promise<Window> {
  const db = new pg.Pool({ connectionString: databaseUrl, max: poolSize });
  const window = newWindow();
  const until = performance.now() + seconds * 1000;
  let next = 0;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (performance.now() < until) {
        const id = `${prefix}${next++ % n}`;
        const t0 = performance.now();
        const result = await db.query(
          `UPDATE holdfast_sessions SET last_heartbeat_at = holdfast_now_ms(), expires_at = holdfast_now_ms() + ttl_millis
           WHERE session_id = $1 AND token_hash = $2 AND expires_at > holdfast_now_ms() RETURNING session_id, expires_at`,
          [id, hashOf(tokenOf(id))],
        );
        if (result.rowCount === 1) window.latencies.push(performance.now() - t0);
        else window.failures++;
      }
    }),
  );
  await db.end();
  return closed(window);
}

/** The store's own heartbeat (batched statements) called directly: the gain without HTTP. */
async function storeHeartbeats(databaseUrl: string, prefix: string, n: number, seconds: number): Promise<Window> {
  const store = new SqlLockStore(new PgDatabase(databaseUrl), 'postgres');
  const window = newWindow();
  const until = performance.now() + seconds * 1000;
  let next = 0;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (performance.now() < until) {
        const id = `${prefix}${next++ % n}`;
        const t0 = performance.now();
        const result = await store.heartbeat({ sessionId: id, tokenHash: hashOf(tokenOf(id)) });
        if (result.kind === 'alive') window.latencies.push(performance.now() - t0);
        else window.failures++;
      }
    }),
  );
  await store.close();
  return closed(window);
}

/** Sessions opened through HTTP (any store); returns their ids and tokens. */
async function openOverHttp(url: string, count: number): Promise<{ id: string; token: string }[]> {
  const pool = await connections([url], 32);
  const opened: { id: string; token: string }[] = [];
  let next = 0;
  await Promise.all(
    pool.map(async (c) => {
      while (next++ < count) {
        const body = (await c.request('POST', '/v1/sessions', { owner: 'scale', ttlMillis: 300_000 })).body as { sessionId: string; sessionToken: string };
        opened.push({ id: body.sessionId, token: body.sessionToken });
      }
      c.close();
    }),
  );
  return opened;
}

/** Closed-loop heartbeats of sessions opened over HTTP (their tokens are the server's). */
async function closedLoopOpened(url: string, sessions: { id: string; token: string }[], seconds: number): Promise<Window> {
  const pool = await connections([url], CALLERS);
  const window = newWindow();
  const until = performance.now() + seconds * 1000;
  let next = 0;
  await Promise.all(
    pool.map(async (c) => {
      while (performance.now() < until) {
        const s = sessions[next++ % sessions.length]!;
        const t0 = performance.now();
        const answer = await c.request('POST', `/v1/sessions/${s.id}/heartbeat`, {}, s.token);
        if (answer.status === 200) window.latencies.push(performance.now() - t0);
        else window.failures++;
      }
    }),
  );
  pool.forEach((c) => c.close());
  return closed(window);
}

/**
 * Open-loop heartbeats: session i of `prefix`0..n-1 beats every TTL/3, i.e. n/(TTL/3) per second,
 * spread evenly; a request waits for a free connection when all are busy and its latency counts
 * from its scheduled instant (no coordinated omission).
 */
class HeartbeatPacer {
  private n = 0;
  private issued = 0;
  private epoch = performance.now();
  private timer: NodeJS.Timeout | undefined;
  private readonly idle: LeanHttpConnection[];
  private readonly backlog: { id: string; due: number }[] = [];
  window = newWindow();

  constructor(private readonly pool: LeanHttpConnection[], private readonly prefix: string) {
    this.idle = [...pool];
  }

  static async start(urls: string[], prefix: string, connectionCount = CALLERS) {
    return new HeartbeatPacer(await connections(urls, connectionCount), prefix);
  }

  setSessions(n: number) {
    this.n = n;
    this.issued = 0;
    this.epoch = performance.now();
    this.window = newWindow();
    this.timer ??= setInterval(() => this.tick(), 5);
  }

  private tick() {
    const now = performance.now();
    const rate = this.n / PERIOD; // per millisecond
    const due = Math.floor((now - this.epoch) * rate);
    for (; this.issued < due; this.issued++) {
      this.backlog.push({ id: `${this.prefix}${this.issued % this.n}`, due: this.epoch + this.issued / rate });
    }
    this.drain();
  }

  private drain() {
    while (this.idle.length > 0 && this.backlog.length > 0) {
      const job = this.backlog.shift()!;
      const c = this.idle.pop()!;
      const window = this.window;
      c.request('POST', `/v1/sessions/${job.id}/heartbeat`, {}, tokenOf(job.id)).then(
        (answer) => {
          if (answer.status === 200) window.latencies.push(performance.now() - job.due);
          else window.failures++;
          this.idle.push(c);
          this.drain();
        },
        () => {
          window.failures++;
        },
      );
    }
  }

  stop() {
    clearInterval(this.timer);
    this.pool.forEach((c) => c.close());
  }
}

/** Acquire/release churn on fresh keys by `workers` sessions of their own; acquire latency recorded. */
class AcquireChurn {
  window = newWindow();
  private running = true;
  private readonly done: Promise<void>;

  constructor(url: string, workers = 4) {
    this.done = (async () => {
      const pool = await connections([url], workers);
      await Promise.all(
        pool.map(async (c, w) => {
          const opened = (await c.request('POST', '/v1/sessions', { owner: `churn-${w}`, ttlMillis: 300_000 })).body as {
            sessionId: string;
            sessionToken: string;
          };
          for (let j = 0; this.running; j++) {
            const key = encodeURIComponent(`churn/${w}/${j}`);
            const t0 = performance.now();
            const grant = await c.request('POST', `/v1/locks/${key}/acquire`, { sessionId: opened.sessionId, ttlMillis: 30_000 }, opened.sessionToken);
            const window = this.window;
            if (grant.status !== 200) {
              window.failures++;
              continue;
            }
            window.latencies.push(performance.now() - t0);
            const { fencingToken } = grant.body as { fencingToken: string };
            await c.request('POST', `/v1/locks/${key}/release`, { sessionId: opened.sessionId, fencingToken }, opened.sessionToken);
          }
          c.close();
        }),
      );
    })();
  }

  reset() {
    this.window = newWindow();
  }

  async stop() {
    this.running = false;
    await this.done;
  }
}

async function timed(url: string, headers: Record<string, string> = {}, times = 5): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const t0 = performance.now();
    const response = await fetch(url, { headers });
    await response.text();
    if (!response.ok) throw new Error(`${url} answered ${response.status}`);
    samples.push(performance.now() - t0);
  }
  return percentile(samples.sort((a, b) => a - b), 50);
}

interface Row {
  label: string;
  value: string;
}

async function main() {
  const rows: Row[] = [];
  const add = (label: string, value: string) => {
    rows.push({ label, value });
    log(`${label}: ${value}`);
  };
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'holdfast-scale-'));
  const tokensFile = path.join(tmp, 'tokens.json');
  writeFileSync(tokensFile, JSON.stringify([{ name: 'scale-viewer', token: VIEWER_TOKEN, role: 'viewer' }]), { mode: 0o600 });
  let cluster: PostgresCluster | undefined;
  const servers: ServerProcess[] = [];
  const steps: { sessions: number; p99: number; rate: number; failures: number; acquireP99: number }[] = [];
  try {
    log(`cores ${os.cpus().length}; TTL ${TTL} ms, heartbeat every ${PERIOD} ms; target ${fmt(TARGET_SESSIONS)} sessions, ${fmt(TARGET_LOCKS)} locks`);
    cluster = await startPostgres();
    const databaseUrl = await cluster.createDatabase();
    const env = {
      HOLDFAST_STORE: 'postgres',
      DATABASE_URL: databaseUrl,
      HOLDFAST_SWEEP_INTERVAL_MS: '1000', // the default; server-process.ts would set 200
      HOLDFAST_ADMIN_TOKENS_FILE: tokensFile,
      HOLDFAST_LOG_LEVEL: 'info',
    };
    servers.push(await spawnServer(env));
    const a = servers[0]!;
    const db = new pg.Pool({ connectionString: databaseUrl, max: 4 });

    // ---- 1. acceptance: HTTP heartbeats vs raw UPDATEs, 128 callers, same sessions --------------
    await seedSessions(db, 'acc-', 0, 10_000, 300_000, false);
    await closedLoopHeartbeats([a.url], 'acc-', 10_000, 1); // warm-up
    const http = await closedLoopHeartbeats([a.url], 'acc-', 10_000, STEP_SECONDS);
    const raw = await rawHeartbeats(databaseUrl, 'acc-', 10_000, STEP_SECONDS);
    add(`acceptance: one instance, ${CALLERS} callers, HTTP heartbeats/s (p99 ms)`, `${fmt(rateOf(http))} (${fmt(p99(http), 1)})`);
    add(`acceptance: raw one-UPDATE-per-heartbeat/s, pool ${CALLERS} (p99 ms)`, `${fmt(rateOf(raw))} (${fmt(p99(raw), 1)})`);
    add('acceptance: ratio HTTP / raw (target >= 1.5)', `${fmt(rateOf(http) / rateOf(raw), 2)}x`);
    // Diagnostics: the raw work on the server's pool size, and the store's batched heartbeat without HTTP.
    const raw16 = await rawHeartbeats(databaseUrl, 'acc-', 10_000, STEP_SECONDS, 16);
    add('diagnostic: raw one-UPDATE-per-heartbeat/s, pool 16 (p99 ms)', `${fmt(rateOf(raw16))} (${fmt(p99(raw16), 1)})`);
    const direct = await storeHeartbeats(databaseUrl, 'acc-', 10_000, STEP_SECONDS);
    add(`diagnostic: SqlLockStore.heartbeat in the bench process, ${CALLERS} callers, pool 16 (p99 ms)`, `${fmt(rateOf(direct))} (${fmt(p99(direct), 1)})`);
    await db.query(`DELETE FROM holdfast_sessions WHERE session_id LIKE 'acc-%'`);

    // ---- 2. scale steps --------------------------------------------------------------------------
    const sustainable = Math.floor(0.6 * rateOf(http) * (PERIOD / 1000));
    const sessions = Math.min(TARGET_SESSIONS, sustainable);
    const locks = Math.min(TARGET_LOCKS, Math.floor(sessions / 2));
    add(
      'sessions / held locks at full step',
      sessions < TARGET_SESSIONS
        ? `${fmt(sessions)} / ${fmt(locks)} (SCALED DOWN from ${fmt(TARGET_SESSIONS)} / ${fmt(TARGET_LOCKS)}: 0.6 x measured ${fmt(rateOf(http))}/s x ${PERIOD / 1000} s)`
        : `${fmt(sessions)} / ${fmt(locks)}`,
    );
    const churn = new AcquireChurn(a.url);
    const pacer = await HeartbeatPacer.start([a.url], 'live-');
    let seeded = 0;
    for (const fraction of [0.25, 0.5, 1, 1.5]) {
      const n = Math.floor(sessions * fraction);
      await seedSessions(db, 'live-', seeded, n, TTL, true);
      seeded = Math.max(seeded, n);
      pacer.setSessions(n);
      await sleep(1000);
      pacer.window = newWindow();
      churn.reset();
      await sleep(STEP_SECONDS * 1000);
      const w = closed(pacer.window);
      const acquires = closed(churn.window);
      steps.push({ sessions: n, p99: p99(w), rate: rateOf(w), failures: w.failures, acquireP99: p99(acquires) });
      add(
        `step ${fmt(n)} sessions (${fmt(n / (PERIOD / 1000))}/s offered): heartbeats/s, p99 ms, failures; acquire p99 ms`,
        `${fmt(rateOf(w))}, ${fmt(p99(w), 1)}, ${w.failures}; ${fmt(p99(acquires), 1)}`,
      );
    }
    // Back to the full step; the overload step's extra sessions are removed (not part of the storm).
    pacer.setSessions(sessions);
    await db.query(`DELETE FROM holdfast_locks WHERE session_id IN (SELECT session_id FROM holdfast_sessions WHERE session_id LIKE 'live-%' AND substr(session_id, 6)::int >= $1)`, [sessions]);
    await db.query(`DELETE FROM holdfast_sessions WHERE session_id LIKE 'live-%' AND substr(session_id, 6)::int >= $1`, [sessions]);
    await sleep(2000);

    // ---- 3. expiry storm -----------------------------------------------------------------------------
    const stormTtl = 2000;
    await seedSessions(db, 'storm-', 0, STORM, stormTtl, true);
    const expiresAt = Number((await db.query(`SELECT max(expires_at) AS e FROM holdfast_sessions WHERE session_id LIKE 'storm-%'`)).rows[0].e);
    let sweptAt = Number.NaN;
    let maxLag = 0;
    const stormDeadline = Date.now() + stormTtl + 30_000;
    let stormWindowStarted = false;
    while (Date.now() < stormDeadline) {
      const r = (
        await db.query(`SELECT holdfast_now_ms() AS now, (SELECT count(*) FROM holdfast_sessions WHERE session_id LIKE 'storm-%')::int AS left`)
      ).rows[0];
      const now = Number(r.now);
      if (!stormWindowStarted && now >= expiresAt) {
        churn.reset();
        stormWindowStarted = true;
      }
      if (now >= expiresAt) maxLag = Math.max(maxLag, now - expiresAt);
      if (r.left === 0) {
        sweptAt = now;
        break;
      }
      await sleep(100);
    }
    const stormAcquire = closed(churn.window);
    add(
      `storm: ${fmt(STORM)} sessions (${fmt(STORM / 2)} locks) expiring at once: swept after their expiry, s (goal <= 5)`,
      fmt((sweptAt - expiresAt) / 1000, 1),
    );
    add('storm: live acquire p99 ms during the sweep (goal < 100), acquires', `${fmt(p99(stormAcquire), 1)}, ${stormAcquire.latencies.length}`);
    const stormBeats = closed(pacer.window);
    add('storm: heartbeat p99 ms meanwhile (whole step so far), failures', `${fmt(p99(stormBeats), 1)}, ${stormBeats.failures}`);

    // ---- 4. the server at this state -------------------------------------------------------------
    await sleep(1000);
    add(`server RSS MB at ${fmt(sessions)} sessions / ${fmt(locks)} locks`, fmt(rssMb(a)));
    add('/metrics time ms (median of 5)', fmt(await timed(`${a.url}/metrics`), 1));
    add('A1 first page (GET /v1/admin/locks?limit=50) ms (median of 5)', fmt(await timed(`${a.url}/v1/admin/locks?limit=50`, { authorization: `Bearer ${VIEWER_TOKEN}` }), 1));

    // ---- 5. two instances ----------------------------------------------------------------------------
    // The first pacer keeps the sessions alive until the second instance is ready.
    servers.push(await spawnServer(env));
    const b = servers[1]!;
    const pacer2 = await HeartbeatPacer.start([a.url, b.url], 'live-');
    pacer.stop();
    pacer2.setSessions(sessions);
    await sleep(1000);
    pacer2.window = newWindow();
    await sleep(STEP_SECONDS * 1000);
    const paced2 = closed(pacer2.window);
    add(
      `two instances, ${fmt(sessions)} sessions paced: heartbeats/s, p99 ms, failures`,
      `${fmt(rateOf(paced2))}, ${fmt(p99(paced2), 1)}, ${paced2.failures}`,
    );
    pacer2.stop();
    const two = await closedLoopHeartbeats([a.url, b.url], 'live-', sessions, STEP_SECONDS);
    add(`two instances, ${CALLERS} callers closed loop: heartbeats/s (p99 ms)`, `${fmt(rateOf(two))} (${fmt(p99(two), 1)})`);
    add('server RSS MB, each instance', `${fmt(rssMb(a))}, ${fmt(rssMb(b))}`);
    await churn.stop();
    await db.end();
    for (const s of servers.splice(0)) {
      s.child.kill('SIGTERM');
      await s.exited;
    }

    // ---- 6. etcd: one instance, sessions opened over HTTP, closed-loop heartbeats ---------------------
    const etcd = await startEtcd();
    try {
      const onEtcd = await spawnServer({ HOLDFAST_STORE: 'etcd', ETCD_ENDPOINTS: etcd.endpoints.join(','), HOLDFAST_SWEEP_INTERVAL_MS: '1000' });
      servers.push(onEtcd);
      const etcdSessions = await openOverHttp(onEtcd.url, 2_000);
      await closedLoopOpened(onEtcd.url, etcdSessions, 1);
      const onEtcdBeats = await closedLoopOpened(onEtcd.url, etcdSessions, STEP_SECONDS);
      add(`etcd (one node), one instance, ${CALLERS} callers, ${fmt(etcdSessions.length)} sessions: heartbeats/s (p99 ms), failures`, `${fmt(rateOf(onEtcdBeats))} (${fmt(p99(onEtcdBeats), 1)}), ${onEtcdBeats.failures}`);
      add('etcd: server RSS MB', fmt(rssMb(onEtcd)));
    } finally {
      for (const s of servers.splice(0)) {
        s.child.kill('SIGTERM');
        await s.exited;
      }
      await etcd.stop();
    }
  } finally {
    for (const s of servers) {
      s.child.kill('SIGTERM');
      await s.exited;
    }
    await cluster?.stop();
    rmSync(tmp, { recursive: true, force: true });
  }

  const seconds = (Date.now() - startedAt) / 1000;
  const png = linePlotPng([
    { points: steps.map((s) => ({ x: s.sessions, y: s.p99 })), color: [31, 119, 180] },
  ]);
  writeFileSync(path.join(RESULTS, 'scale-heartbeat-p99.png'), png);
  const table = [
    `Run ${new Date().toISOString()} on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'cpu'}), load average at the end ${load()}, ${fmt(seconds)} s.`,
    `PostgreSQL 15 (fsync=off, throwaway), \`holdfast server\` child processes with default settings (pool 16, sweep every 1 s), TTL ${TTL} ms, heartbeat every ${PERIOD} ms.`,
    '',
    '| measure | value |',
    '| --- | --- |',
    ...rows.map((r) => `| ${r.label} | ${r.value} |`),
    '',
    '![heartbeat p99 (ms, y) against sessions heartbeating at TTL/3 (x), one instance](scale-heartbeat-p99.png)',
    '',
    `Plot: heartbeat p99 in ms (y) against sessions (x), one instance; points ${steps.map((s) => `${fmt(s.sessions)}: ${fmt(s.p99, 1)} ms`).join(', ')}.`,
  ].join('\n');
  const markdown = `# Scale bench (\`npm run bench:scale\`)\n\nGenerated by bench/scale.ts; do not edit by hand.\n\n${table}\n`;
  writeFileSync(path.join(RESULTS, 'scale.md'), markdown);
  console.log(`\n${table}\n`);
}

await main();
