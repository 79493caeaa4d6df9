/**
 * The history workload: N SDK clients (each its own LockClient and session,
 * every request recorded at its transport) taking a few contended keys and
 * writing under each grant to a fenced resource, plus an operator who now and
 * then revokes a key or kills a session. Bounded by steps (one step: one
 * acquire-and-hold, one read, or one session close), not by wall time, so a
 * slow machine runs the same schedule, only slower.
 *
 * Holds come in three shapes, chosen from the seed: a short hold released
 * at once; a long hold under withLock (renewed in the background); and an
 * overrun — a holder that works past its TTL without renewing, then writes
 * anyway and releases late, as a paused process would. The overrun is what
 * makes stale writes and stale releases, the inputs most lock bugs need.
 */
import { LockClient } from '../../client/client.js';
import { EndpointsTransport } from '../../client/endpoints.js';
import { seededRandom } from '../../client/random.js';
import type { LockHandle } from '../../client/handle.js';
import type { LockSession } from '../../client/session.js';
import { FetchTransport, type Transport } from '../../client/transport.js';
import { FencedResourceRecorder } from '../support/fenced-resource.js';
import type { HistoryRecorder } from './recorder.js';
import { Gate, RecordingTransport } from './recording-transport.js';

export interface WorkloadOptions {
  recorder: HistoryRecorder;
  /** The instances' addresses (their proxies), labelled A, B, C in order. */
  urls: string[];
  operatorToken: string;
  clients: number;
  keys: number;
  keyPrefix: string;
  /** Steps across all clients; the run ends when they are spent. */
  steps: number;
  /** Only bounds a run that cannot make progress (every step failing slowly). */
  deadlineMillis: number;
  /** Steps taken even past the deadline: on a slow machine the run still reaches its first fault. */
  minSteps?: number;
  seed: number;
  sessionTtlMillis: number;
  lockTtlMillis: number;
}

export interface Workload {
  readonly resource: FencedResourceRecorder;
  /** Steps taken so far. */
  readonly progress: number;
  readonly running: boolean;
  readonly errors: Map<string, number>;
  /** Freezes one client's traffic both ways until heal (the nemesis' client pause). */
  pauseClient(pick: (n: number) => number): { target: string; heal(): Promise<void> };
  /** Resolves when every client has stopped and closed its session. */
  done: Promise<void>;
}

export function startWorkload(options: WorkloadOptions): Workload {
  const { recorder } = options;
  const resource = new FencedResourceRecorder();
  const errors = new Map<string, number>();
  const random = seededRandom(options.seed);
  const pick = (n: number) => Math.floor(random() * n);
  const deadline = Date.now() + options.deadlineMillis;
  let taken = 0;
  let running = true;
  const sessions = new Set<LockSession>();
  const gates = Array.from({ length: options.clients }, () => new Gate());
  const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis));
  const countError = (error: unknown) => {
    const k = `${(error as Error).name}: ${String((error as Error).message).replace(/\d+/g, 'N').slice(0, 70)}`;
    errors.set(k, (errors.get(k) ?? 0) + 1);
  };
  const nextStep = () => {
    if (!running || taken >= options.steps || (Date.now() > deadline && taken >= (options.minSteps ?? 0))) {
      running = false;
      return false;
    }
    taken += 1;
    return true;
  };

  const write = (process: string, key: string, token: string) => {
    const finish = recorder.invoke({ process, f: 'write', key, args: { fencingToken: token } });
    finish({ outcome: 'ok', result: { accepted: resource.write(key, token) } });
  };

  /**
   * An overrun past its TTL wakes, as a paused process does, to find the key taken by another
   * holder: the client's own contender (a second session, which waits out the lapse) takes the
   * key and holds it across the late write and release, so they meet a live grant every time.
   * Waiting for another client to happen to take the key left that to the schedule: on a loaded
   * machine a run could pass without one stale release landing on a live grant, and a planted
   * release-ignores-token bug went unseen. Bounded by the wait; a contender that is not granted
   * in time (another holder kept the key) leaves the overrun as it was.
   */
  const overrunTakenOver = async (process: string, contender: () => Promise<LockSession>, key: string, late: () => Promise<void>) => {
    const ttl = options.lockTtlMillis;
    let taker: LockSession | undefined;
    let handle: LockHandle | null;
    try {
      taker = await contender();
      handle = await taker.acquire(key, { ttlMillis: 3 * ttl, policy: { totalBudgetMillis: 3 * ttl, maxAttempts: 100, waitMillis: 2 * ttl } });
    } catch (error) {
      countError(error);
      handle = null;
    }
    if (!handle || !taker) return late();
    write(process, key, handle.fencingToken);
    try {
      await late();
    } finally {
      if (!handle.lost) write(process, key, handle.fencingToken);
      await taker.release(handle);
    }
  };

  const client = async (c: number) => {
    const process = `c${c}`;
    // The contender is a process of its own in the history, paused with its client.
    const contenderProcess = `${process}-contender`;
    const clientAs = (name: string, seed: number) => {
      const transports = options.urls.map(
        (url, i) => new RecordingTransport(new FetchTransport(url), recorder, name, String.fromCharCode(65 + i), gates[c]),
      );
      const transport: Transport = transports.length === 1 ? transports[0]! : new EndpointsTransport(transports);
      return new LockClient({ transport, random: seededRandom(seed) });
    };
    const lockClient = clientAs(process, options.seed * 31 + c);
    const contenderClient = clientAs(contenderProcess, options.seed * 37 + c);
    let session: LockSession | undefined;
    let contenderSession: LockSession | undefined;
    const contender = async () => {
      if (!contenderSession || contenderSession.lost || contenderSession.closed) {
        contenderSession = await contenderClient.openSession({ ttlMillis: options.sessionTtlMillis, owner: contenderProcess });
        sessions.add(contenderSession);
      }
      return contenderSession;
    };
    const ttl = options.lockTtlMillis;
    while (nextStep()) {
      try {
        if (!session || session.lost || session.closed) {
          session = await lockClient.openSession({ ttlMillis: options.sessionTtlMillis, owner: process });
          sessions.add(session);
        }
        const key = `${options.keyPrefix}/${pick(options.keys)}`;
        const roll = random();
        const policy = { totalBudgetMillis: 3_000, maxAttempts: 100, waitMillis: random() < 0.5 ? 0 : 1_000 };
        if (roll < 0.1) {
          await lockClient.readLock(key);
        } else if (roll < 0.13) {
          sessions.delete(session);
          await session.close();
        } else if (roll < 0.3) {
          // A long hold, renewed in the background for as long as the work runs.
          const work = ttl * (1 + random());
          await session.withLock(key, async (handle) => {
            write(process, key, handle.fencingToken);
            await sleep(work);
            if (!handle.lost) write(process, key, handle.fencingToken);
          }, { ttlMillis: ttl, policy });
        } else {
          const handle = await session.acquire(key, { ttlMillis: ttl, policy });
          if (!handle) continue;
          const answeredAt = Date.now();
          write(process, key, handle.fencingToken);
          if (roll < 0.45) {
            // The overrun: no renewal, past the TTL; writes as if it still held, releases late.
            await sleep(ttl * (0.7 + random() * 0.8));
            const holder = session;
            const late = async () => {
              write(process, key, handle.fencingToken);
              await holder.release(handle);
            };
            await (Date.now() - answeredAt >= ttl ? overrunTakenOver(contenderProcess, contender, key, late) : late());
          } else {
            await sleep(random() * ttl * 0.2);
            if (!handle.lost) write(process, key, handle.fencingToken);
            await session.release(handle);
          }
        }
      } catch (error) {
        countError(error);
        await sleep(20);
      }
    }
    for (const open of [session, contenderSession]) {
      if (!open) continue;
      sessions.delete(open);
      await open.close().catch(countError);
    }
  };

  /** The operator: every few steps, reads a key and revokes it (by token, or blindly), or kills a session. */
  const operator = async () => {
    const transports = options.urls.map((url, i) => new RecordingTransport(new FetchTransport(url), recorder, 'admin', String.fromCharCode(65 + i)));
    const send = (request: Parameters<Transport['send']>[0]) =>
      transports[pick(transports.length)]!.send({ ...request, headers: { authorization: `Bearer ${options.operatorToken}` }, signal: AbortSignal.timeout(3_000) });
    let next = 40;
    while (running) {
      if (taken < next) {
        await sleep(25);
        continue;
      }
      next = taken + 30 + pick(40);
      try {
        const key = `${options.keyPrefix}/${pick(options.keys)}`;
        if (random() < 0.7) {
          const info = await send({ method: 'GET', path: `/v1/locks/${encodeURIComponent(key)}` });
          const token = (info.body as { fencingToken?: string } | undefined)?.fencingToken;
          const body = { reason: 'history workload', ...(token && random() < 0.7 ? { expectedFencingToken: token } : {}) };
          await send({ method: 'POST', path: `/v1/admin/locks/${encodeURIComponent(key)}/revoke`, body });
        } else {
          const live = [...sessions];
          const victim = live[pick(live.length)];
          if (victim) await send({ method: 'POST', path: `/v1/admin/sessions/${encodeURIComponent(victim.sessionId)}/kill`, body: { reason: 'history workload' } });
        }
      } catch (error) {
        countError(error);
      }
    }
  };

  const done = Promise.all([...Array.from({ length: options.clients }, (_, c) => client(c)), operator()]).then(() => {
    running = false;
  });
  return {
    resource,
    get progress() {
      return taken;
    },
    get running() {
      return running;
    },
    errors,
    pauseClient(choose) {
      const c = choose(options.clients);
      gates[c]!.close();
      return { target: `c${c}`, heal: async () => gates[c]!.open() };
    },
    done,
  };
}
