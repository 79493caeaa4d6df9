/**
 * `npm run bench:scale` — issue 16: the steady load of a lock service is heartbeats.
 *
 * On a throwaway PostgreSQL with real `holdfast server` child processes (default settings):
 * 1. Acceptance: one instance, 128 closed-loop callers heartbeating through HTTP, against the raw
 *    backend doing one UPDATE per heartbeat (a `pg` pool of 128) in the same run.
 * 2. Saturation at the default TTL: sessions heartbeating at TTL/3 (open loop, latency from the
 *    scheduled instant, so a server falling behind shows), half of them holding a lock, with
 *    acquire/release churn beside; steps of 0.25-2x of what one instance should sustain (0.6 x the
 *    measured closed-loop rate x TTL/3) give the plot of heartbeat p99 against sessions.
 * 3. The full target, 100,000 sessions and 50,000 held locks, with churn: at the default TTL they
 *    need 100,000 / (TTL/3) heartbeats/s, more than one instance on 2 cores does, so this step runs
 *    at the smallest TTL of a fixed ladder whose TTL/3 rate is at most 0.75 x the measured
 *    closed-loop rate (or SCALE_LONG_TTL_MS), and the table says which.
 * 4. An expiry storm at that state: 10,000 more sessions (half with a lock) stop heartbeating at
 *    once; the time from their expiry until the sweeper has ended them all, and the churn's acquire
 *    p99 meanwhile.
 * 5. Server RSS, /metrics time, A1 (GET /v1/admin/locks) first page time at that state; CPU per
 *    heartbeat of the server and of PostgreSQL (CPU time, which a loaded machine does not inflate).
 * 6. Two instances on the same PostgreSQL: the 100,000 sessions paced over both, and their closed-loop rate.
 * 7. etcd (one local node), one instance: closed-loop heartbeats (2,000 sessions) with the CPU per
 *    heartbeat of the server and of etcd; then sessions opened over HTTP toward 100,000 (each is an
 *    etcd lease) and every other one given a lock, each within a time budget, and those paced at
 *    the TTL the measured rate allows, with churn. The table says how far it got and why.
 * Two diagnostic rows split the acceptance gap: the raw work on the server's pool size (16), and
 * the store's batched heartbeat called in-process (no HTTP).
 *
 * Knobs: SCALE_SESSIONS (100000), SCALE_LOCKS (50000), SCALE_TTL_MS (15000), SCALE_LONG_TTL_MS
 * (from the ladder), SCALE_ETCD_TTL_MS (from the ladder), SCALE_CALLERS (128), SCALE_STEP_SECONDS (8),
 * SCALE_STORM_SESSIONS (10000), SCALE_ETCD_OPEN_SECONDS (120), SCALE_ETCD_LOCK_SECONDS (45). Writes bench/results/scale.md and
 * bench/results/scale-heartbeat-p99.png (PNG drawn by bench/lib/png-plot.ts with node:zlib).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEtcd } from '../test/support/etcd.js';
import { startPostgres, type PostgresCluster } from '../test/support/postgres.js';
import { PgDatabase } from '../lock/store/sql/pg-database.js';
import { SqlLockStore } from '../lock/store/sql/sql-store.js';
import { BIN, spawnServer, type ServerProcess } from '../test/support/server-process.js';
import { useCompiledBuild } from './lib/compiled-build.js';
import { LeanHttpConnection } from './lib/lean-http.js';
import { clusterCpuMillis } from './lib/cpu.js';
import { counterDelta, readEtcdCounters, type EtcdCounters } from './lib/etcd-metrics.js';
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
const ETCD_OPEN_SECONDS = num('SCALE_ETCD_OPEN_SECONDS', 120);
const ETCD_LOCK_SECONDS = num('SCALE_ETCD_LOCK_SECONDS', 45);
/** `heartbeat-cpu`: only the CPU per heartbeat on PostgreSQL and on etcd, same closed loop (writes results/partial/). */
const ONLY = process.env.SCALE_ONLY ?? '';
/** heartbeat-cpu: the etcd-store server writes a V8 CPU profile here (node --cpu-prof) when it stops. */
const ETCD_CPU_PROFILE_DIR = process.env.SCALE_ETCD_CPU_PROFILE_DIR ?? '';
const PERIOD = TTL / 3;
/**
 * TTLs a user might set, up to the API's maximum session TTL (300 s, lock/http/schemas.ts); the
 * long-TTL steps take the smallest whose TTL/3 rate one instance sustains, else the maximum.
 */
const TTL_LADDER = [15, 20, 30, 45, 60, 90, 120, 180, 240, 300].map((s) => s * 1000);
const SUSTAINED_SHARE = 0.75;
/**
 * `unpacedMillis`: how long the sessions wait unheartbeated before the pacer starts (opening them, then
 * taking locks): a TTL shorter than that lets the first ones lapse before they are paced (run of
 * 2026-12-03: etcd at 120 s after 97 s of opens and 45 s of acquires, every paced heartbeat refused).
 */
function ttlFor(knob: string, sessions: number, closedLoopRate: number, unpacedMillis = 0): number {
  if (process.env[knob]) return num(knob, 0);
  const fits = (ttl: number) => ttl > unpacedMillis && sessions / (ttl / 3000) <= SUSTAINED_SHARE * closedLoopRate;
  return TTL_LADDER.find(fits) ?? TTL_LADDER.at(-1)!;
}
// The servers under test run as a production install does (compiled-build.ts).
const SERVER_RUNTIME = useCompiledBuild();
const RESULTS = path.resolve(import.meta.dirname, 'results');
const VIEWER_TOKEN = 'scale-bench-viewer-token-0123456789';

const startedAt = Date.now();
const load = () => os.loadavg().map((l) => l.toFixed(1)).join(' ');
const startLoad = load();
const log = (line: string) => console.log(`[${((Date.now() - startedAt) / 1000).toFixed(0)}s, load ${load()}] ${line}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tokenOf = (id: string) => `tok-${id}`;
const hashOf = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');
const pidRssMb = (pid: number) => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);
const rssMb = (server: ServerProcess) => pidRssMb(server.child.pid!);
/** User + system CPU of a process, from /proc/PID/stat (fields after the command name: [11] utime, [12] stime). */
const cpuMillis = (pid: number) => {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
};
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

/**
 * `CALLERS` closed loops for `seconds`: each calls `beat` with its caller number and the next
 * index (shared, so the loops walk the sessions round-robin) and times it; `beat` answers whether
 * the heartbeat was accepted (a latency) or not (a failure).
 */
async function closedLoop(seconds: number, beat: (caller: number, index: number) => Promise<boolean>): Promise<Window> {
  const window = newWindow();
  const until = performance.now() + seconds * 1000;
  let next = 0;
  await Promise.all(
    Array.from({ length: CALLERS }, async (_, caller) => {
      while (performance.now() < until) {
        const t0 = performance.now();
        if (await beat(caller, next++)) window.latencies.push(performance.now() - t0);
        else window.failures++;
      }
    }),
  );
  return closed(window);
}

/** Closed-loop HTTP heartbeats, round-robin over sessions `prefix`0..n-1. */
async function closedLoopHeartbeats(urls: string[], prefix: string, n: number, seconds: number): Promise<Window> {
  const pool = await connections(urls, CALLERS);
  const window = await closedLoop(seconds, async (caller, index) => {
    const id = `${prefix}${index % n}`;
    return (await pool[caller]!.request('POST', `/v1/sessions/${id}/heartbeat`, {}, tokenOf(id))).status === 200;
  });
  pool.forEach((c) => c.close());
  return window;
}

/** The raw backend: one UPDATE per heartbeat, `CALLERS` at once on a pool of `poolSize`. */
async function rawHeartbeats(databaseUrl: string, prefix: string, n: number, seconds: number, poolSize = CALLERS): Promise<Window> {
  const db = new pg.Pool({ connectionString: databaseUrl, max: poolSize });
  const window = await closedLoop(seconds, async (_, index) => {
    const id = `${prefix}${index % n}`;
    const result = await db.query(
      `UPDATE holdfast_sessions SET last_heartbeat_at = holdfast_now_ms(), expires_at = holdfast_now_ms() + ttl_millis
       WHERE session_id = $1 AND token_hash = $2 AND expires_at > holdfast_now_ms() RETURNING session_id, expires_at`,
      [id, hashOf(tokenOf(id))],
    );
    return result.rowCount === 1;
  });
  await db.end();
  return window;
}

/** The store's own heartbeat (batched statements) called directly: the gain without HTTP. */
async function storeHeartbeats(databaseUrl: string, prefix: string, n: number, seconds: number): Promise<Window> {
  const store = new SqlLockStore(new PgDatabase(databaseUrl), 'postgres');
  const window = await closedLoop(seconds, async (_, index) => {
    const id = `${prefix}${index % n}`;
    return (await store.heartbeat({ sessionId: id, tokenHash: hashOf(tokenOf(id)) })).kind === 'alive';
  });
  await store.close();
  return window;
}

/** Sessions opened through HTTP (any store) until `count` or `seconds` run out; their ids and tokens. */
async function openOverHttp(url: string, count: number, ttlMillis = 300_000, seconds = Infinity): Promise<{ id: string; token: string }[]> {
  const pool = await connections([url], 64);
  const opened: { id: string; token: string }[] = [];
  const until = performance.now() + seconds * 1000;
  let next = 0;
  await Promise.all(
    pool.map(async (c) => {
      while (next++ < count && performance.now() < until) {
        const answer = await c.request('POST', '/v1/sessions', { owner: 'scale', ttlMillis });
        if (answer.status !== 201 && answer.status !== 200) throw new Error(`session open answered ${answer.status}`);
        const body = answer.body as { sessionId: string; sessionToken: string };
        opened.push({ id: body.sessionId, token: body.sessionToken });
      }
      c.close();
    }),
  );
  return opened;
}

/** Every session of `sessions` acquires one lock of its own, until done or `seconds` run out; how many hold one. */
async function acquireOverHttp(url: string, sessions: { id: string; token: string }[], seconds: number): Promise<{ held: number; refused: Record<number, number> }> {
  const pool = await connections([url], 64);
  const until = performance.now() + seconds * 1000;
  let next = 0;
  let held = 0;
  const refused: Record<number, number> = {};
  await Promise.all(
    pool.map(async (c) => {
      for (let i = next++; i < sessions.length && performance.now() < until; i = next++) {
        const s = sessions[i]!;
        const answer = await c.request('POST', `/v1/locks/${encodeURIComponent(`held/${s.id}`)}/acquire`, { sessionId: s.id, ttlMillis: 600_000 }, s.token);
        if (answer.status === 200) held++;
        else refused[answer.status] = (refused[answer.status] ?? 0) + 1;
      }
      c.close();
    }),
  );
  return { held, refused };
}

/** Closed-loop heartbeats of sessions opened over HTTP (their tokens are the server's). */
async function closedLoopOpened(url: string, sessions: { id: string; token: string }[], seconds: number): Promise<Window> {
  const pool = await connections([url], CALLERS);
  const window = await closedLoop(seconds, async (caller, index) => {
    const session = sessions[index % sessions.length]!;
    return (await pool[caller]!.request('POST', `/v1/sessions/${session.id}/heartbeat`, {}, session.token)).status === 200;
  });
  pool.forEach((c) => c.close());
  return window;
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
  private backlog: { index: number; due: number }[] = [];
  private head = 0;
  window = newWindow();

  /** Sessions are `prefix`0..n-1 with the bench's tokens, or `opened` (tokens the server issued). */
  constructor(
    private readonly pool: LeanHttpConnection[],
    private readonly prefix: string,
    private readonly period: number,
    private readonly opened?: { id: string; token: string }[],
  ) {
    this.idle = [...pool];
  }

  static async start(urls: string[], prefix: string, period = PERIOD, opened?: { id: string; token: string }[]) {
    return new HeartbeatPacer(await connections(urls, CALLERS), prefix, period, opened);
  }

  setSessions(n: number) {
    this.n = n;
    this.issued = 0;
    this.epoch = performance.now();
    // An overloaded step's backlog is not the next step's load.
    this.backlog = [];
    this.head = 0;
    this.window = newWindow();
    this.timer ??= setInterval(() => this.tick(), 5);
  }

  private tick() {
    const now = performance.now();
    const rate = this.n / this.period; // per millisecond
    const due = Math.floor((now - this.epoch) * rate);
    for (; this.issued < due; this.issued++) {
      this.backlog.push({ index: this.issued % this.n, due: this.epoch + this.issued / rate });
    }
    this.drain();
  }

  private drain() {
    while (this.idle.length > 0 && this.head < this.backlog.length) {
      const job = this.backlog[this.head++]!;
      if (this.head > 65_536) {
        this.backlog = this.backlog.slice(this.head);
        this.head = 0;
      }
      const c = this.idle.pop()!;
      const window = this.window;
      const id = this.opened ? this.opened[job.index]!.id : `${this.prefix}${job.index}`;
      const token = this.opened ? this.opened[job.index]!.token : tokenOf(id);
      c.request('POST', `/v1/sessions/${id}/heartbeat`, {}, token).then(
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

/**
 * CPU per heartbeat of the server process and its store, PostgreSQL then etcd, each one instance
 * with ${CALLERS} closed-loop callers over 2,000 sessions opened over HTTP (issue 22's acceptance:
 * etcd's server CPU per heartbeat at most 2x PostgreSQL's).
 */
async function heartbeatCpu(add: (label: string, value: string) => void, onPostgres: ServerProcess, postmasterPid: number) {
  /** `count`, when given, is read just before and after the window (etcd's own call counters). */
  const measure = async (server: ServerProcess, storeCpu: () => number, count?: () => Promise<EtcdCounters>) => {
    const sessions = await openOverHttp(server.url, 2_000);
    await closedLoopOpened(server.url, sessions, 1);
    const countedAt = await count?.();
    const serverAt = cpuMillis(server.child.pid!);
    const storeAt = storeCpu();
    const window = await closedLoopOpened(server.url, sessions, STEP_SECONDS);
    const beats = window.latencies.length + window.failures;
    const serverPerBeat = (cpuMillis(server.child.pid!) - serverAt) / beats;
    const storePerBeat = (storeCpu() - storeAt) / beats;
    const calls = count && countedAt ? counterDelta(countedAt, await count()).calls : {};
    return { window, server: serverPerBeat, store: storePerBeat, callsPerBeat: Object.entries(calls).map(([method, n]) => `${method} ${fmt(n / beats, 3)}`).join(', ') };
  };
  const row = (name: string, m: Awaited<ReturnType<typeof measure>>) =>
    add(
      `${name}, one instance, ${CALLERS} callers, 2,000 sessions: heartbeats/s (p99 ms), failures; CPU ms per heartbeat, server process / store`,
      `${fmt(rateOf(m.window))} (${fmt(p99(m.window), 1)}), ${m.window.failures}; ${fmt(m.server, 3)} / ${fmt(m.store, 3)}`,
    );
  const postgres = await measure(onPostgres, () => clusterCpuMillis(postmasterPid));
  row('PostgreSQL', postgres);
  const etcd = await startEtcd();
  try {
    const profiled = ETCD_CPU_PROFILE_DIR ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${ETCD_CPU_PROFILE_DIR}`, BIN, 'server'] } : {};
    const onEtcd = await spawnServer({ HOLDFAST_STORE: 'etcd', ETCD_ENDPOINTS: etcd.endpoints.join(','), HOLDFAST_SWEEP_INTERVAL_MS: '1000' }, profiled);
    try {
      const onEtcdCpu = await measure(onEtcd, () => cpuMillis(etcd.member.pid!), () => readEtcdCounters(etcd.endpoints[0]!));
      row('etcd (one node)', onEtcdCpu);
      // Keep-alives are messages on one stream, not unary calls: what is counted here is the rest.
      add('etcd (one node): unary gRPC calls per heartbeat, by method (keep-alives ride one stream)', onEtcdCpu.callsPerBeat || 'none');
      add('etcd server CPU per heartbeat / PostgreSQL server CPU per heartbeat (target <= 2)', `${fmt(onEtcdCpu.server / postgres.server, 2)}x`);
    } finally {
      onEtcd.child.kill('SIGTERM');
      await onEtcd.exited;
    }
  } finally {
    await etcd.stop();
  }
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
  const longSteps: typeof steps = [];
  try {
    log(`cores ${os.cpus().length}; TTL ${TTL} ms, heartbeat every ${PERIOD} ms; target ${fmt(TARGET_SESSIONS)} sessions, ${fmt(TARGET_LOCKS)} locks`);
    cluster = await startPostgres();
    const databaseUrl = await cluster.createDatabase();
    const postmasterPid = Number(readFileSync(`${cluster.dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
    const env = {
      HOLDFAST_STORE: 'postgres',
      DATABASE_URL: databaseUrl,
      HOLDFAST_SWEEP_INTERVAL_MS: '1000', // the default; server-process.ts would set 200
      HOLDFAST_ADMIN_TOKENS_FILE: tokensFile,
      HOLDFAST_LOG_LEVEL: 'info',
    };
    servers.push(await spawnServer(env));
    const a = servers[0]!;
    if (ONLY === 'heartbeat-cpu') {
      await heartbeatCpu(add, a, postmasterPid);
      const lines = [`Run ${new Date().toISOString()}, load average at the start ${startLoad}, at the end ${load()}.`, '', '| measure | value |', '| --- | --- |', ...rows.map((r) => `| ${r.label} | ${r.value} |`)];
      mkdirSync(path.join(RESULTS, 'partial'), { recursive: true });
      writeFileSync(path.join(RESULTS, 'partial', 'scale-heartbeat-cpu.md'), `# \`SCALE_ONLY=heartbeat-cpu npm run bench:scale\`\n\n${lines.join('\n')}\n`);
      return;
    }
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

    // ---- 2. saturation at the default TTL ------------------------------------------------------------
    const sustainable = Math.floor(0.6 * rateOf(http) * (PERIOD / 1000));
    log(`default TTL: one instance should sustain about ${fmt(sustainable)} sessions (0.6 x ${fmt(rateOf(http))}/s x ${PERIOD / 1000} s)`);
    const churn = new AcquireChurn(a.url);
    const pacer = await HeartbeatPacer.start([a.url], 'live-');
    let seeded = 0;
    for (const fraction of [0.25, 0.5, 1, 1.5, 2]) {
      const n = Math.floor(sustainable * fraction);
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
        `TTL ${TTL / 1000} s, step ${fmt(n)} sessions (${fmt(n / (PERIOD / 1000))}/s offered): heartbeats/s, p99 ms, failures; acquire p99 ms`,
        `${fmt(rateOf(w))}, ${fmt(p99(w), 1)}, ${w.failures}; ${fmt(p99(acquires), 1)}`,
      );
    }
    pacer.stop();
    // The default-TTL sessions leave without a storm of their own (the storm below is measured alone).
    await db.query(`DELETE FROM holdfast_locks WHERE session_id LIKE 'live-%'`);
    await db.query(`DELETE FROM holdfast_sessions WHERE session_id LIKE 'live-%'`);

    // ---- 3. the full target at the TTL one instance sustains ----------------------------------------
    const longTtl = ttlFor('SCALE_LONG_TTL_MS', TARGET_SESSIONS, rateOf(http));
    const longPeriod = longTtl / 3;
    const locks = Math.min(TARGET_LOCKS, Math.floor(TARGET_SESSIONS / 2));
    const defaultNeeds = TARGET_SESSIONS / (PERIOD / 1000);
    add(
      `full step: TTL chosen for ${fmt(TARGET_SESSIONS)} sessions`,
      `${longTtl / 1000} s (heartbeat every ${fmt(longPeriod / 1000, 1)} s = ${fmt(TARGET_SESSIONS / (longPeriod / 1000))}/s offered; ` +
        `the default ${TTL / 1000} s TTL would need ${fmt(defaultNeeds)}/s, ${fmt(defaultNeeds / rateOf(http), 1)}x the measured closed-loop ${fmt(rateOf(http))}/s; ` +
        `smallest TTL of ${TTL_LADDER.map((t) => t / 1000).join('/')} s offering <= ${SUSTAINED_SHARE} x that, else the API maximum)`,
    );
    const seedAt = performance.now();
    await seedSessions(db, 'big-', 0, TARGET_SESSIONS, longTtl, true);
    log(`seeded ${fmt(TARGET_SESSIONS)} sessions and ${fmt(locks)} locks in ${fmt((performance.now() - seedAt) / 1000, 1)} s`);
    const bigPacer = await HeartbeatPacer.start([a.url], 'big-', longPeriod);
    bigPacer.setSessions(TARGET_SESSIONS);
    await sleep(1000);
    bigPacer.window = newWindow();
    churn.reset();
    const serverCpuAt = cpuMillis(a.child.pid!);
    const postgresCpuAt = clusterCpuMillis(postmasterPid);
    await sleep(STEP_SECONDS * 1000);
    const full = closed(bigPacer.window);
    const fullAcquires = closed(churn.window);
    const beats = full.latencies.length + full.failures;
    const serverCpuPerBeat = (cpuMillis(a.child.pid!) - serverCpuAt) / beats;
    const postgresCpuPerBeat = (clusterCpuMillis(postmasterPid) - postgresCpuAt) / beats;
    longSteps.push({ sessions: TARGET_SESSIONS, p99: p99(full), rate: rateOf(full), failures: full.failures, acquireP99: p99(fullAcquires) });
    add(
      `full step, one instance: ${fmt(TARGET_SESSIONS)} sessions, ${fmt(locks)} held locks, TTL ${longTtl / 1000} s, churn beside: heartbeats/s, p99 ms, failures; acquire p99 ms`,
      `${fmt(rateOf(full))}, ${fmt(p99(full), 1)}, ${full.failures}; ${fmt(p99(fullAcquires), 1)}`,
    );
    add(
      'full step: CPU ms per heartbeat, server process (incl. its share of churn) / PostgreSQL cluster',
      `${fmt(serverCpuPerBeat, 3)} / ${fmt(postgresCpuPerBeat, 3)} (one core each would cap at ${fmt(1000 / serverCpuPerBeat)}/s / ${fmt(1000 / postgresCpuPerBeat)}/s)`,
    );

    // ---- 4. expiry storm at that state ---------------------------------------------------------------
    const stormTtl = 2000;
    await seedSessions(db, 'storm-', 0, STORM, stormTtl, true);
    const expiresAt = Number((await db.query(`SELECT max(expires_at) AS e FROM holdfast_sessions WHERE session_id LIKE 'storm-%'`)).rows[0].e);
    let sweptAt = Number.NaN;
    const stormDeadline = Date.now() + stormTtl + 30_000;
    let stormWindowStarted = false;
    while (Date.now() < stormDeadline) {
      const r = (
        await db.query(`SELECT holdfast_now_ms() AS now, (SELECT count(*) FROM holdfast_sessions WHERE session_id LIKE 'storm-%')::int AS left`)
      ).rows[0];
      const now = Number(r.now);
      if (!stormWindowStarted && now >= expiresAt) {
        churn.reset();
        bigPacer.window = newWindow();
        stormWindowStarted = true;
      }
      if (r.left === 0) {
        sweptAt = now;
        break;
      }
      await sleep(100);
    }
    const stormAcquire = closed(churn.window);
    const stormBeats = closed(bigPacer.window);
    add(
      `storm: ${fmt(STORM)} sessions (${fmt(STORM / 2)} locks) expiring at once beside the full step: swept after their expiry, s (goal <= 5)`,
      fmt((sweptAt - expiresAt) / 1000, 1),
    );
    add('storm: live acquire p99 ms during the sweep (goal < 100), acquires', `${fmt(p99(stormAcquire), 1)}, ${stormAcquire.latencies.length}`);
    add('storm: heartbeat p99 ms during the sweep, failures', `${fmt(p99(stormBeats), 1)}, ${stormBeats.failures}`);

    // ---- 5. the server at this state -----------------------------------------------------------------
    await sleep(1000);
    add(`server RSS MB at ${fmt(TARGET_SESSIONS)} sessions / ${fmt(locks)} locks`, fmt(rssMb(a)));
    add('/metrics time ms (median of 5)', fmt(await timed(`${a.url}/metrics`), 1));
    add('A1 first page (GET /v1/admin/locks?limit=50) ms (median of 5)', fmt(await timed(`${a.url}/v1/admin/locks?limit=50`, { authorization: `Bearer ${VIEWER_TOKEN}` }), 1));

    // ---- 6. two instances ----------------------------------------------------------------------------
    // The first pacer keeps the sessions alive until the second instance is ready.
    servers.push(await spawnServer(env));
    const b = servers[1]!;
    const pacer2 = await HeartbeatPacer.start([a.url, b.url], 'big-', longPeriod);
    bigPacer.stop();
    pacer2.setSessions(TARGET_SESSIONS);
    await sleep(1000);
    pacer2.window = newWindow();
    await sleep(STEP_SECONDS * 1000);
    const paced2 = closed(pacer2.window);
    add(
      `two instances, ${fmt(TARGET_SESSIONS)} sessions at TTL ${longTtl / 1000} s paced: heartbeats/s, p99 ms, failures`,
      `${fmt(rateOf(paced2))}, ${fmt(p99(paced2), 1)}, ${paced2.failures}`,
    );
    pacer2.stop();
    const two = await closedLoopHeartbeats([a.url, b.url], 'big-', TARGET_SESSIONS, STEP_SECONDS);
    add(`two instances, ${CALLERS} callers closed loop: heartbeats/s (p99 ms)`, `${fmt(rateOf(two))} (${fmt(p99(two), 1)})`);
    add('server RSS MB, each instance', `${fmt(rssMb(a))}, ${fmt(rssMb(b))}`);
    await churn.stop();
    await db.end();
    for (const s of servers.splice(0)) {
      s.child.kill('SIGTERM');
      await s.exited;
    }
    await cluster.stop();
    cluster = undefined;

    // ---- 7. etcd, one instance ------------------------------------------------------------------------
    const etcd = await startEtcd();
    try {
      const onEtcd = await spawnServer({ HOLDFAST_STORE: 'etcd', ETCD_ENDPOINTS: etcd.endpoints.join(','), HOLDFAST_SWEEP_INTERVAL_MS: '1000' });
      servers.push(onEtcd);
      const etcdPid = etcd.member.pid!;
      const fewSessions = await openOverHttp(onEtcd.url, 2_000);
      await closedLoopOpened(onEtcd.url, fewSessions, 1);
      const etcdServerCpuAt = cpuMillis(onEtcd.child.pid!);
      const etcdCpuAt = cpuMillis(etcdPid);
      const onEtcdBeats = await closedLoopOpened(onEtcd.url, fewSessions, STEP_SECONDS);
      const etcdBeats = onEtcdBeats.latencies.length + onEtcdBeats.failures;
      const etcdServerCpu = (cpuMillis(onEtcd.child.pid!) - etcdServerCpuAt) / etcdBeats;
      const etcdCpu = (cpuMillis(etcdPid) - etcdCpuAt) / etcdBeats;
      add(
        `etcd (one node), one instance, ${CALLERS} callers, ${fmt(fewSessions.length)} sessions: heartbeats/s (p99 ms), failures`,
        `${fmt(rateOf(onEtcdBeats))} (${fmt(p99(onEtcdBeats), 1)}), ${onEtcdBeats.failures}`,
      );
      add(
        'etcd: CPU ms per heartbeat, server process / etcd (a lease keep-alive plus a coalesced read of the session key)',
        `${fmt(etcdServerCpu, 3)} / ${fmt(etcdCpu, 3)} (one core each would cap at ${fmt(1000 / etcdServerCpu)}/s / ${fmt(1000 / etcdCpu)}/s)`,
      );
      const etcdTtl = ttlFor('SCALE_ETCD_TTL_MS', TARGET_SESSIONS, rateOf(onEtcdBeats), (ETCD_OPEN_SECONDS + ETCD_LOCK_SECONDS) * 1000);
      add(
        'etcd: TTL for the sessions toward 100k, and the sessions one instance sustains at it',
        `${etcdTtl / 1000} s (${fmt(TARGET_SESSIONS)} would offer ${fmt(TARGET_SESSIONS / (etcdTtl / 3000))}/s; ${SUSTAINED_SHARE} x the measured ${fmt(rateOf(onEtcdBeats))}/s x ${etcdTtl / 3000} s = ${fmt(SUSTAINED_SHARE * rateOf(onEtcdBeats) * (etcdTtl / 3000))} sessions)`,
      );
      const openAt = performance.now();
      const many = await openOverHttp(onEtcd.url, TARGET_SESSIONS - fewSessions.length, etcdTtl, ETCD_OPEN_SECONDS);
      const openSeconds = (performance.now() - openAt) / 1000;
      const etcdSessions = [...fewSessions, ...many];
      add(
        `etcd: sessions opened over HTTP toward ${fmt(TARGET_SESSIONS)} (each an etcd lease, TTL ${etcdTtl / 1000} s for ${fmt(many.length)} of them), within ${ETCD_OPEN_SECONDS} s: count, opens/s`,
        `${fmt(etcdSessions.length)}, ${fmt(many.length / openSeconds)}`,
      );
      const lockAt = performance.now();
      const { held: etcdLocks, refused } = await acquireOverHttp(onEtcd.url, many.filter((_, i) => i % 2 === 0), ETCD_LOCK_SECONDS);
      add(
        `etcd: locks acquired over HTTP for every other session, within ${ETCD_LOCK_SECONDS} s: held, acquires/s, refused by status`,
        `${fmt(etcdLocks)}, ${fmt(etcdLocks / ((performance.now() - lockAt) / 1000))}, ${JSON.stringify(refused)}`,
      );
      const etcdChurn = new AcquireChurn(onEtcd.url);
      const etcdPacer = await HeartbeatPacer.start([onEtcd.url], '', etcdTtl / 3, many);
      etcdPacer.setSessions(many.length);
      await sleep(1000);
      etcdPacer.window = newWindow();
      etcdChurn.reset();
      await sleep(STEP_SECONDS * 1000);
      const etcdFull = closed(etcdPacer.window);
      const etcdFullAcquires = closed(etcdChurn.window);
      etcdPacer.stop();
      await etcdChurn.stop();
      add(
        `etcd: ${fmt(etcdSessions.length)} sessions, ${fmt(etcdLocks)} held locks, ${fmt(many.length)} paced at TTL ${etcdTtl / 1000} s (${fmt(many.length / (etcdTtl / 3000))}/s offered), churn beside: heartbeats/s, p99 ms, failures; acquire p99 ms`,
        `${fmt(rateOf(etcdFull))}, ${fmt(p99(etcdFull), 1)}, ${etcdFull.failures}; ${fmt(p99(etcdFullAcquires), 1)}`,
      );
      add('etcd: server RSS MB, etcd RSS MB', `${fmt(rssMb(onEtcd))}, ${fmt(pidRssMb(etcdPid))}`);
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
  // Blue: one instance at the default TTL (where it saturates); orange: the full target at the long TTL.
  const png = linePlotPng([
    { points: steps.map((s) => ({ x: s.sessions, y: s.p99 })), color: [31, 119, 180] },
    { points: longSteps.map((s) => ({ x: s.sessions, y: s.p99 })), color: [255, 127, 14] },
  ]);
  writeFileSync(path.join(RESULTS, 'scale-heartbeat-p99.png'), png);
  const table = [
    `Run ${new Date().toISOString()} on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'cpu'}), load average at the start ${startLoad}, at the end ${load()}, ${fmt(seconds)} s.`,
    `PostgreSQL 15 (fsync=off, throwaway) and etcd (one node, tmpfs), \`holdfast server\` child processes (${SERVER_RUNTIME}) with default settings (pool 16, sweep every 1 s); ` +
      `default TTL ${TTL / 1000} s (heartbeat every ${PERIOD / 1000} s); the 100,000-session rows run at a longer TTL, named in their rows, because at the default TTL they need more heartbeats/s than one instance on 2 cores does.`,
    '',
    '| measure | value |',
    '| --- | --- |',
    ...rows.map((r) => `| ${r.label} | ${r.value} |`),
    '',
    '![heartbeat p99 (ms, y) against sessions heartbeating at TTL/3 (x), one instance; blue at the default TTL, orange the full step at its longer TTL](scale-heartbeat-p99.png)',
    '',
    `Plot: heartbeat p99 in ms (y) against sessions (x), one instance; blue, TTL ${TTL / 1000} s: ${steps.map((s) => `${fmt(s.sessions)}: ${fmt(s.p99, 1)} ms`).join(', ')}; ` +
      `orange, the full step at its longer TTL: ${longSteps.map((s) => `${fmt(s.sessions)}: ${fmt(s.p99, 1)} ms`).join(', ')}.`,
  ].join('\n');
  const markdown = `# Scale bench (\`npm run bench:scale\`)\n\nGenerated by bench/scale.ts; do not edit by hand.\n\n${table}\n`;
  writeFileSync(path.join(RESULTS, 'scale.md'), markdown);
  console.log(`\n${table}\n`);
}

await main();
