/**
 * The load generator, run in a worker thread so its event loop is not the
 * Holdfast server's: the server under test runs in the main thread, as it
 * would in its own process, and the client's work does not queue behind it.
 *
 * Every worker loops acquire → release until the window closes; a cycle is
 * counted when it completes inside the measured window.
 */
import { randomUUID } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import pg from 'pg';
import { PgDatabase } from '../../lock/store/sql/pg-database.js';
import { hashSessionToken, newSessionToken } from '../../lock/core/session-token.js';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import { LockClient } from '../../client/client.js';
import type { AcquireOptions, LockSession } from '../../client/session.js';
import { FetchTransport } from '../../client/transport.js';
import { NodeHttpTransport } from '../../client/node-http-transport.js';
import { currentThreadCpuMillis } from './cpu.js';
import { JsonHttpClient, type JsonResponse } from './http-json.js';
import { LeanHttpConnection } from './lean-http.js';
import type { LoadTask, WorkerMessage } from './load-task.js';
import { CoalescingRawBackend, rawCycle } from './raw-backend.js';

const SESSION_TTL_MILLIS = 60_000;
const HEARTBEAT_EVERY_MILLIS = 20_000;
const LOCK_TTL_MILLIS = 30_000;

type Task<T extends LoadTask['target']> = Extract<LoadTask, { target: T }>;

interface Requester {
  request(method: 'POST' | 'DELETE', path: string, body?: unknown, bearer?: string): Promise<JsonResponse>;
}

const send = (message: WorkerMessage) => parentPort!.postMessage(message);

class Window {
  readonly measureFrom: number;
  readonly stopAt: number;
  readonly latencies: number[] = [];
  readonly errors: Record<string, number> = {};
  #threadCpuAtStart: number | undefined;
  #threadCpuAtEnd: number | undefined;

  constructor(task: LoadTask) {
    this.measureFrom = performance.now() + task.warmupSeconds * 1000;
    this.stopAt = this.measureFrom + task.seconds * 1000;
    setTimeout(() => {
      this.#threadCpuAtStart = currentThreadCpuMillis();
      send({ type: 'measuring' });
    }, task.warmupSeconds * 1000);
    setTimeout(() => {
      this.#threadCpuAtEnd = currentThreadCpuMillis();
      send({ type: 'measured' });
    }, (task.warmupSeconds + task.seconds) * 1000);
  }

  /** This worker thread's CPU inside the window (null if a timer did not fire, e.g. a failed cell). */
  get clientThreadCpuMillis(): number | null {
    if (this.#threadCpuAtStart === undefined || this.#threadCpuAtEnd === undefined) return null;
    return this.#threadCpuAtEnd - this.#threadCpuAtStart;
  }

  get open(): boolean {
    return performance.now() < this.stopAt;
  }

  record(startedAt: number): void {
    const endedAt = performance.now();
    if (endedAt >= this.measureFrom && endedAt <= this.stopAt) this.latencies.push(endedAt - startedAt);
  }

  error(label: string): void {
    this.errors[label] = (this.errors[label] ?? 0) + 1;
  }
}

/** Runs `concurrency` copies of `cycle` until the window closes. */
async function loop(task: LoadTask, window: Window, cycle: (index: number) => Promise<boolean>, failure: string): Promise<void> {
  await Promise.all(
    Array.from({ length: task.concurrency }, async (_, index) => {
      while (window.open) {
        const startedAt = performance.now();
        if (await cycle(index)) window.record(startedAt);
        else window.error(failure);
      }
    }),
  );
}

function failureOf(response: JsonResponse): string {
  const code = (response.body as { error?: { code?: string } } | undefined)?.error?.code ?? 'unknown';
  return `${response.status} ${code}`;
}

/** One kept-alive connection per worker: lean sockets, or a node:http agent with that many sockets. */
async function openRequesters(task: Task<'http'>): Promise<{ requesters: Requester[]; close(): void }> {
  if (task.client === 'node') {
    const client = new JsonHttpClient(task.url, task.concurrency);
    return { requesters: Array.from({ length: task.concurrency }, () => client), close: () => client.close() };
  }
  const connections = await Promise.all(Array.from({ length: task.concurrency }, () => LeanHttpConnection.open(task.url)));
  return { requesters: connections, close: () => connections.forEach((c) => c.close()) };
}

async function runHttp(task: Task<'http'>): Promise<Window> {
  const { requesters, close } = await openRequesters(task);
  // Sessions open before the window starts, so session set-up is never timed.
  const sessions: string[] = [];
  const sessionTokens: string[] = [];
  for (const [i, requester] of requesters.entries()) {
    const opened = await requester.request('POST', '/v1/sessions', { ttlMillis: SESSION_TTL_MILLIS, owner: `bench-${i}` });
    if (opened.status !== 201) throw new Error(`opening a session: ${failureOf(opened)}`);
    sessions.push((opened.body as { sessionId: string }).sessionId);
    sessionTokens.push((opened.body as { sessionToken: string }).sessionToken);
  }
  // Cells normally end long before the TTL; this keeps a long BENCH_SECONDS honest.
  const heartbeats = new JsonHttpClient(task.url, 1);
  const heartbeat = setInterval(() => {
    for (const [i, id] of sessions.entries()) void heartbeats.request('POST', `/v1/sessions/${id}/heartbeat`, {}, sessionTokens[i]).catch(() => {});
  }, HEARTBEAT_EVERY_MILLIS);

  const window = new Window(task);
  const keys = task.keys;
  if (keys.kind === 'multi') throw new Error('multi-holder cells run through the SDK only');
  const keyOf = (index: number) => encodeURIComponent(keys.kind === 'own' ? `${task.keyPrefix}own-${index}` : `${task.keyPrefix}hot-${index % keys.hotKeys}`);
  const waitMillis = keys.kind === 'hot' ? { waitMillis: keys.waitMillis } : {};
  try {
    await Promise.all(
      requesters.map(async (requester, index) => {
        const sessionId = sessions[index]!;
        const bearer = sessionTokens[index]!;
        const key = keyOf(index);
        while (window.open) {
          const startedAt = performance.now();
          const acquired = await requester.request('POST', `/v1/locks/${key}/acquire`, { sessionId, ttlMillis: LOCK_TTL_MILLIS, ...waitMillis }, bearer);
          if (acquired.status !== 200) {
            window.error(`acquire ${failureOf(acquired)}`);
            continue;
          }
          const fencingToken = (acquired.body as { fencingToken: string }).fencingToken;
          const released = await requester.request('POST', `/v1/locks/${key}/release`, { sessionId, fencingToken }, bearer);
          if (released.status !== 200) {
            window.error(`release ${failureOf(released)}`);
            continue;
          }
          window.record(startedAt);
        }
      }),
    );
  } finally {
    clearInterval(heartbeat);
    await Promise.all(sessions.map((id, i) => requesters[i]!.request('DELETE', `/v1/sessions/${id}`, undefined, sessionTokens[i]).catch(() => undefined)));
    heartbeats.close();
    close();
  }
  return window;
}

/**
 * The same cycles as runHttp, through the SDK: one LockClient (one connection pool) for the
 * worker, a session per loop (opened before the window, heartbeated by the SDK itself).
 */
async function runSdk(task: Task<'sdk'>): Promise<Window> {
  if (!/^http:\/\/(127\.0\.0\.1|localhost)[:/]/.test(task.url)) throw new Error(`bench traffic stays on loopback; refusing ${task.url}`);
  const transport = task.transport === 'fetch' ? new FetchTransport(task.url) : task.transport === 'node-http' ? new NodeHttpTransport(task.url) : undefined;
  const client = new LockClient(transport ? { transport } : { baseUrl: task.url });
  const sessions = [];
  for (let i = 0; i < task.concurrency; i += 1) sessions.push(await client.openSession({ ttlMillis: SESSION_TTL_MILLIS, owner: `bench-${i}` }));
  const keys = task.keys;
  const keyOf = (index: number) =>
    keys.kind === 'own' ? `${task.keyPrefix}own-${index}` : keys.kind === 'hot' ? `${task.keyPrefix}hot-${index % keys.hotKeys}` : `${task.keyPrefix}multi`;
  // Hot and multi-holder keys: one server-side wait per attempt, as the HTTP rows do, within a budget that fits a few.
  const options =
    keys.kind === 'own'
      ? { ttlMillis: LOCK_TTL_MILLIS }
      : {
          ttlMillis: LOCK_TTL_MILLIS,
          policy: { waitMillis: keys.waitMillis, totalBudgetMillis: 3 * keys.waitMillis },
          ...(keys.kind === 'multi' ? keys.holding : {}),
        };
  if (keys.kind === 'multi') await proveMultiHolder(sessions, keyOf(0), options);
  const window = new Window(task);
  try {
    await Promise.all(
      sessions.map(async (session, index) => {
        const key = keyOf(index);
        while (window.open) {
          const startedAt = performance.now();
          let handle;
          try {
            handle = await session.acquire(key, options);
          } catch (error) {
            window.error(`acquire ${(error as Error).name}`);
            continue;
          }
          if (handle === null) {
            window.error('acquire not granted');
            continue;
          }
          try {
            await session.release(handle);
          } catch (error) {
            window.error(`release ${(error as Error).name}`);
            continue;
          }
          window.record(startedAt);
        }
      }),
    );
  } finally {
    await Promise.all(sessions.map((session) => session.close().catch(() => undefined)));
  }
  return window;
}

/**
 * A multi-holder cell measures nothing if the holding never reached the server (an SDK that drops
 * the options takes a mutex): two sessions must hold the key at once before the window opens.
 */
async function proveMultiHolder(sessions: LockSession[], key: string, options: AcquireOptions): Promise<void> {
  const [first, second] = sessions;
  if (!first || !second) return;
  const probe = { ...options, policy: { totalBudgetMillis: 1_000 } };
  const handles = [await first.acquire(key, probe), await second.acquire(key, probe)];
  await Promise.all(handles.map((handle, i) => (handle ? sessions[i]!.release(handle) : undefined)));
  if (handles.some((handle) => handle === null)) throw new Error(`two sessions could not hold ${key} at once: the SDK did not send the holding (mode/limit)`);
}

async function runRaw(task: Task<'raw'>): Promise<{ window: Window; meanBatchSize?: number }> {
  // A pool of the same size as the concurrency, as Holdfast's store gets.
  const pool = new pg.Pool({ connectionString: task.databaseUrl, max: task.concurrency });
  // Connections open before the window starts, as the HTTP server's pool is warm by then too.
  const clients = await Promise.all(Array.from({ length: task.concurrency }, () => pool.connect()));
  for (const client of clients) client.release();
  const sessions = Array.from({ length: task.concurrency }, () => randomUUID());
  const coalescing = task.coalesce ? new CoalescingRawBackend(pool, task.concurrency) : null;

  const window = new Window(task);
  try {
    await loop(
      task,
      window,
      (index) =>
        coalescing
          ? coalescing.cycle(`${task.keyPrefix}own-${index}`, sessions[index]!)
          : rawCycle(pool, `${task.keyPrefix}own-${index}`, sessions[index]!),
      'raw cycle found its key taken or its token gone',
    );
  } finally {
    await pool.end();
  }
  return { window, ...(coalescing ? { meanBatchSize: coalescing.meanBatchSize() } : {}) };
}

async function runStore(task: Task<'store'>): Promise<Window> {
  const store = new SqlLockStore(new PgDatabase(task.databaseUrl, task.concurrency), 'postgres');
  await store.init();
  const sessions = await Promise.all(
    Array.from({ length: task.concurrency }, async (_, i) => {
      const sessionId = randomUUID();
      const tokenHash = hashSessionToken(newSessionToken());
      await store.openSession({ sessionId, owner: `bench-${i}`, ttlMillis: 600_000, tokenHash });
      return { sessionId, tokenHash };
    }),
  );
  const window = new Window(task);
  try {
    await loop(
      task,
      window,
      async (index) => {
        const key = `${task.keyPrefix}own-${index}`;
        const session = sessions[index]!;
        const acquired = await store.tryAcquire({ key, session, ttlMillis: LOCK_TTL_MILLIS });
        if (acquired.kind !== 'granted') return false;
        return (await store.release({ key, session, fencingToken: acquired.grant.fencingToken })).kind === 'released';
      },
      'store cycle was not granted or not released',
    );
  } finally {
    await store.close();
  }
  return window;
}

async function openHttpSessions(url: string, count: number): Promise<{ connections: LeanHttpConnection[]; sessions: { id: string; token: string }[] }> {
  const connections = await Promise.all(Array.from({ length: count }, () => LeanHttpConnection.open(url)));
  const sessions = [];
  for (const [i, connection] of connections.entries()) {
    const opened = await connection.request('POST', '/v1/sessions', { ttlMillis: SESSION_TTL_MILLIS, owner: `bench-${i}` });
    if (opened.status !== 201) throw new Error(`opening a session: ${failureOf(opened)}`);
    const body = opened.body as { sessionId: string; sessionToken: string };
    sessions.push({ id: body.sessionId, token: body.sessionToken });
  }
  return { connections, sessions };
}

async function runHandoff(task: Task<'handoff'>): Promise<{ window: Window; waits: number[] }> {
  const { connections, sessions } = await openHttpSessions(task.url, task.concurrency);
  const background = task.background ? new pg.Pool({ connectionString: task.background.databaseUrl, max: 2 }) : null;
  const window = new Window(task);
  const waits: number[] = [];
  const key = encodeURIComponent(`${task.keyPrefix}handoff`);
  let releaseSentAt: number | null = null;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const backgroundLoop = (async () => {
    if (!background || !task.background) return;
    let n = 0;
    const every = 1000 / task.background.cyclesPerSecond;
    let next = performance.now();
    while (window.open) {
      await rawCycle(background, `${task.keyPrefix}bg-${n++ % 100}`, 'background');
      next += every;
      const lag = next - performance.now();
      if (lag > 0) await sleep(lag);
    }
  })();
  try {
    await Promise.all(
      connections.map(async (connection, index) => {
        const session = sessions[index]!;
        while (window.open) {
          const askedAt = performance.now();
          const acquired = await connection.request('POST', `/v1/locks/${key}/acquire`, { sessionId: session.id, ttlMillis: LOCK_TTL_MILLIS, waitMillis: task.waitMillis }, session.token);
          const grantedAt = performance.now();
          if (acquired.status !== 200) {
            window.error(`acquire ${failureOf(acquired)}`);
            continue;
          }
          if (releaseSentAt !== null && grantedAt >= window.measureFrom && grantedAt <= window.stopAt) {
            window.latencies.push(grantedAt - releaseSentAt);
            waits.push(grantedAt - askedAt);
          }
          releaseSentAt = null;
          await sleep(task.holdMillis);
          const fencingToken = (acquired.body as { fencingToken: string }).fencingToken;
          releaseSentAt = performance.now();
          const released = await connection.request('POST', `/v1/locks/${key}/release`, { sessionId: session.id, fencingToken }, session.token);
          if (released.status !== 200) window.error(`release ${failureOf(released)}`);
          await sleep(task.rejoinMillis);
        }
      }),
    );
    await backgroundLoop;
  } finally {
    await Promise.all(sessions.map((s, i) => connections[i]!.request('DELETE', `/v1/sessions/${s.id}`, undefined, s.token).catch(() => undefined)));
    connections.forEach((c) => c.close());
    await background?.end();
  }
  return { window, waits };
}

async function runEtcdLock(task: Task<'etcd-lock'>): Promise<Window> {
  const { Etcd3 } = await import('etcd3');
  const client = new Etcd3({ hosts: task.endpoints });
  const window = new Window(task);
  try {
    await loop(
      task,
      window,
      async (index) => {
        const lock = client.lock(`/${task.keyPrefix}recipe-${index}`).ttl(30);
        await lock.acquire();
        await lock.release();
        return true;
      },
      'etcd lock cycle failed',
    );
  } finally {
    client.close();
  }
  return window;
}

async function runEtcdRaw(task: Task<'etcd-raw'>): Promise<Window> {
  const { Etcd3, CompareResult, CompareTarget } = await import('etcd3');
  const client = new Etcd3({ hosts: task.endpoints });
  const window = new Window(task);
  const value = Buffer.alloc(200, 'x'); // about the size of the store's lock record
  try {
    await loop(
      task,
      window,
      async (index) => {
        const key = Buffer.from(`/${task.keyPrefix}raw-${index}`);
        const absent = { key, target: CompareTarget.Create, result: CompareResult.Equal, create_revision: '0' };
        const created = await client.kv.txn({ compare: [absent], success: [{ request_put: { key, value } }], failure: [] });
        if (!created.succeeded) return false;
        const mine = { key, target: CompareTarget.Create, result: CompareResult.Equal, create_revision: created.header.revision };
        const deleted = await client.kv.txn({ compare: [mine], success: [{ request_delete_range: { key } }], failure: [] });
        return deleted.succeeded;
      },
      'etcd raw cycle failed',
    );
  } finally {
    client.close();
  }
  return window;
}

try {
  const task = workerData as LoadTask;
  let window: Window;
  let meanBatchSize: number | undefined;
  let waitsMillis: number[] | undefined;
  if (task.target === 'http') window = await runHttp(task);
  else if (task.target === 'sdk') window = await runSdk(task);
  else if (task.target === 'store') window = await runStore(task);
  else if (task.target === 'handoff') ({ window, waits: waitsMillis } = await runHandoff(task));
  else if (task.target === 'etcd-lock') window = await runEtcdLock(task);
  else if (task.target === 'etcd-raw') window = await runEtcdRaw(task);
  else ({ window, meanBatchSize } = await runRaw(task));
  send({
    type: 'result',
    latenciesMillis: window.latencies,
    errors: window.errors,
    clientThreadCpuMillis: window.clientThreadCpuMillis,
    ...(meanBatchSize !== undefined ? { meanBatchSize } : {}),
    ...(waitsMillis !== undefined ? { waitsMillis } : {}),
  });
} catch (error) {
  send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
}
