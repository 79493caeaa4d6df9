/**
 * Core on its own (issue 21): LockService on the in-memory store (which passes the store
 * conformance suite) and a clock the test moves. No server, no database, no real time: every
 * wait ends because the test released a key, ended a session or moved the clock past a deadline.
 */
import { afterEach, describe, expect, test } from 'vitest';
import type { LockEvents } from '../../contract/lock-events.js';
import type { Clock } from '../../lock/core/clock.js';
import { LockService } from '../../lock/core/lock-service.js';
import { hashSessionToken } from '../../lock/core/session-token.js';
import { ContentionExceededError, LimitMismatchError, LockContendedError, SessionNotFoundError, UnauthenticatedError, ValidationFailedError } from '../../lock/errors.js';
import { MemoryLockStore } from '../../lock/store/memory/memory-store.js';

/** Time moves only when the test says; sleepers due by then wake, in order. */
class SteppedClock implements Clock {
  private current = 1_700_000_000_000;
  private sleepers: { at: number; wake: () => void }[] = [];
  now(): number {
    return this.current;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const sleeper = { at: this.current + ms, wake: () => resolve() };
      this.sleepers.push(sleeper);
      signal?.addEventListener('abort', () => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        reject(signal.reason);
      }, { once: true });
    });
  }
  /** Moves time by `ms` and lets everything that became due run. */
  async advance(ms: number): Promise<void> {
    this.current += ms;
    const due = this.sleepers.filter((s) => s.at <= this.current);
    this.sleepers = this.sleepers.filter((s) => s.at > this.current);
    for (const s of due) s.wake();
    await settle();
  }
}

const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
};

function recordingEvents() {
  const facts: { event: string; fact: unknown }[] = [];
  const events = new Proxy({} as LockEvents, {
    get: (_target, property) => (...args: unknown[]) => {
      facts.push({ event: String(property), fact: args.at(-1) });
    },
  });
  return { events, facts, of: (event: string) => facts.filter((f) => f.event === event).map((f) => f.fact) };
}

const ctx = { requestId: 'core-test' };
const services: LockService[] = [];
afterEach(async () => {
  for (const service of services.splice(0)) await service.stop();
});

async function core(options: { maxWaitsPerSession?: number } = {}) {
  const clock = new SteppedClock();
  const store = new MemoryLockStore({ now: () => clock.now() });
  const recorded = recordingEvents();
  const service = new LockService(store, recorded.events, { clock, random: () => 0.5, ...options });
  services.push(service);
  await service.start();
  const session = async (owner: string) => {
    const view = await service.openSession({ ttlMillis: 60_000, owner }, ctx);
    return { sessionId: view.sessionId, tokenHash: hashSessionToken(view.sessionToken) };
  };
  return { clock, store, service, recorded, session };
}

describe('core on the in-memory store', () => {
  test('the wait strategy is polling (the store offers no waiter, feed or fleet state)', async () => {
    const { service } = await core();
    expect(service.releaseFeedUp).toBe(false);
    expect(service.fleet).toBeNull();
  });

  test('a waiting acquire is granted when the holder releases, with the next token, and counted while it waits', async () => {
    const { service, recorded, session } = await core();
    const [a, b] = [await session('a'), await session('b')];
    const held = await service.acquire({ key: 'k', session: a, ttlMillis: 30_000, waitMillis: 0 }, ctx);
    const waiting = service.acquire({ key: 'k', session: b, ttlMillis: 30_000, waitMillis: 10_000 }, ctx);
    await settle();
    expect((await service.readLock('k')).waiterCount).toBe(1);
    await service.release({ key: 'k', session: a, fencingToken: held.fencingToken }, ctx);
    const granted = await waiting;
    expect(BigInt(granted.fencingToken)).toBeGreaterThan(BigInt(held.fencingToken));
    expect(granted.sessionId).toBe(b.sessionId);
    expect(recorded.of('waitEnded')).toEqual([expect.objectContaining({ outcome: 'released' })]);
    expect(service.waiters.total()).toBe(0);
  });

  test('a wait whose deadline passes is answered LOCK_CONTENDED and observed as a deadline', async () => {
    const { clock, service, recorded, session } = await core();
    const [a, b] = [await session('a'), await session('b')];
    await service.acquire({ key: 'k', session: a, ttlMillis: 30_000, waitMillis: 0 }, ctx);
    const waiting = service.acquire({ key: 'k', session: b, ttlMillis: 30_000, waitMillis: 2_000 }, ctx).catch((e: unknown) => e);
    for (let i = 0; i < 40; i++) await clock.advance(100);
    expect(await waiting).toBeInstanceOf(LockContendedError);
    expect(recorded.of('waitEnded')).toEqual([expect.objectContaining({ outcome: 'deadline' })]);
    expect(service.waiters.total()).toBe(0);
  });

  test('a wait with a wrong token is refused 401 after the store checked it, and never counted or capped', async () => {
    const { service, session } = await core({ maxWaitsPerSession: 2 });
    const [a, victim] = [await session('a'), await session('victim')];
    await service.acquire({ key: 'k', session: a, ttlMillis: 30_000, waitMillis: 0 }, ctx);
    const forged = { sessionId: victim.sessionId, tokenHash: hashSessionToken('not-the-victims-token') };
    const attacks = Array.from({ length: 10 }, () => service.acquire({ key: 'k', session: forged, ttlMillis: 30_000, waitMillis: 10_000 }, ctx).catch((e: unknown) => e));
    expect(service.waiters.countForSession(victim.sessionId)).toBe(0);
    for (const answer of await Promise.all(attacks)) expect(answer).toBeInstanceOf(UnauthenticatedError);
    expect((await service.readLock('k')).waiterCount).toBe(0);
    // The victim's own cap is whole: two real waits are admitted.
    const own = [0, 1].map(() => service.acquire({ key: 'k', session: victim, ttlMillis: 30_000, waitMillis: 10_000 }, ctx).catch((e: unknown) => e));
    await settle();
    expect(service.waiters.countForSession(victim.sessionId)).toBe(2);
    await service.closeSession(victim, ctx);
    for (const answer of await Promise.all(own)) expect(answer).toBeInstanceOf(SessionNotFoundError);
  });

  test('past the per-session wait cap a held key is refused 429; a free key is still granted', async () => {
    const { service, session } = await core({ maxWaitsPerSession: 2 });
    const [a, b] = [await session('a'), await session('b')];
    await service.acquire({ key: 'held', session: a, ttlMillis: 30_000, waitMillis: 0 }, ctx);
    const waits = [0, 1].map(() => service.acquire({ key: 'held', session: b, ttlMillis: 30_000, waitMillis: 10_000 }, ctx).catch((e: unknown) => e));
    await settle();
    const third = await service.acquire({ key: 'held', session: b, ttlMillis: 30_000, waitMillis: 10_000 }, ctx).catch((e: unknown) => e);
    expect(third).toBeInstanceOf(ContentionExceededError);
    const free = await service.acquire({ key: 'free', session: b, ttlMillis: 30_000, waitMillis: 10_000 }, ctx);
    expect(free.sessionId).toBe(b.sessionId);
    await service.closeSession(b, ctx);
    for (const answer of await Promise.all(waits)) expect(answer).toBeInstanceOf(SessionNotFoundError);
  });

  test('a lock whose TTL lapsed on the store clock is free before any sweep: the polling waiter takes it', async () => {
    const { clock, service, session } = await core();
    const a = await session('a');
    const b = await session('b');
    await service.acquire({ key: 'k', session: a, ttlMillis: 1_000, waitMillis: 0 }, ctx);
    const waiting = service.acquire({ key: 'k', session: b, ttlMillis: 30_000, waitMillis: 20_000 }, ctx);
    await clock.advance(1_500);
    await clock.advance(1_000); // past the next poll
    const granted = await waiting;
    expect(granted.sessionId).toBe(b.sessionId);
    expect(await service.sweep(ctx)).toEqual({ sessions: 0, locks: 0 }); // nothing lapsed is left to end
  });
});

describe('the sweep', () => {
  test('a stop ends it after the batch in hand (shutdown never waits for a storm); the next sweep ends the rest', async () => {
    const { clock, store, service, session } = await core();
    const lapsing = await Promise.all(Array.from({ length: 7 }, (_, i) => service.openSession({ ttlMillis: 1_000, owner: `storm-${i}` }, ctx)));
    const holder = await session('holder');
    await service.acquire({ key: 'short', session: holder, ttlMillis: 1_000, waitMillis: 0 }, ctx); // its own TTL lapses
    await clock.advance(2_000);
    const stop = new AbortController();
    const calls: string[] = [];
    const expireSessions = store.expireSessions.bind(store);
    const expireLocks = store.expireLocks.bind(store);
    store.expireSessions = async (limit) => {
      calls.push('sessions');
      const ended = await expireSessions(limit);
      stop.abort(); // shutdown arrives while the first batch is in hand
      return ended;
    };
    store.expireLocks = async (limit) => {
      calls.push('locks');
      return expireLocks(limit);
    };
    expect(await service.sweep(ctx, { batch: 3, stop: stop.signal })).toEqual({ sessions: 3, locks: 0 });
    expect(calls).toEqual(['sessions']);
    expect(await service.sweep(ctx, { batch: 3 })).toEqual({ sessions: 4, locks: 1 });
    expect(calls).toEqual(['sessions', 'sessions', 'sessions', 'locks']);
    for (const view of lapsing) expect(await store.getSession(view.sessionId)).toBeNull();
    expect(await store.expireLocks(10)).toEqual([]);
  });
});

describe('multi-holder keys through core (issue 23)', () => {
  test('a semaphore admits its limit; a waiter takes the permit a holder frees, with a higher token; another limit is LIMIT_MISMATCH', async () => {
    const { service, recorded, session } = await core();
    const [a, b, c, d] = [await session('a'), await session('b'), await session('c'), await session('d')];
    const ga = await service.acquire({ key: 'pool', session: a, ttlMillis: 30_000, waitMillis: 0, limit: 2 }, ctx);
    const gb = await service.acquire({ key: 'pool', session: b, ttlMillis: 30_000, waitMillis: 0, limit: 2 }, ctx);
    expect([ga, gb].map((g) => [g.mode, g.limit])).toEqual([['exclusive', 2], ['exclusive', 2]]);
    const waiting = service.acquire({ key: 'pool', session: c, ttlMillis: 30_000, waitMillis: 10_000, limit: 2 }, ctx);
    await settle();
    expect((await service.readLock('pool')).waiterCount).toBe(1);
    const mismatch = await service.acquire({ key: 'pool', session: d, ttlMillis: 30_000, waitMillis: 10_000, limit: 3 }, ctx).catch((e: unknown) => e);
    expect(mismatch).toBeInstanceOf(LimitMismatchError);
    expect(service.waiters.countForSession(d.sessionId)).toBe(0);
    await service.release({ key: 'pool', session: a, fencingToken: ga.fencingToken }, ctx);
    const gc = await waiting;
    expect(BigInt(gc.fencingToken)).toBeGreaterThan(BigInt(gb.fencingToken));
    const info = await service.readLock('pool');
    expect(info).toMatchObject({ held: true, mode: 'exclusive', limit: 2, fencingToken: gb.fencingToken, waiterCount: 0 });
    expect(info.holders.map((h) => h.sessionId)).toEqual([b.sessionId, c.sessionId]);
    expect(recorded.of('holdEnded')).toEqual([expect.objectContaining({ outcome: 'released', kind: 'semaphore' })]);
  });

  test('readers share a key; a writer waits for the last of them and is granted after it', async () => {
    const { service, session } = await core();
    const [r1, r2, w] = [await session('r1'), await session('r2'), await session('w')];
    const g1 = await service.acquire({ key: 'rw', session: r1, ttlMillis: 30_000, waitMillis: 0, mode: 'shared' }, ctx);
    const g2 = await service.acquire({ key: 'rw', session: r2, ttlMillis: 30_000, waitMillis: 0, mode: 'shared' }, ctx);
    expect(g2.mode).toBe('shared');
    const writer = service.acquire({ key: 'rw', session: w, ttlMillis: 30_000, waitMillis: 10_000 }, ctx);
    await settle();
    await service.release({ key: 'rw', session: r1, fencingToken: g1.fencingToken }, ctx);
    await settle();
    expect((await service.readLock('rw')).holders.map((h) => h.sessionId)).toEqual([r2.sessionId]);
    await service.release({ key: 'rw', session: r2, fencingToken: g2.fencingToken }, ctx);
    const gw = await writer;
    expect(gw).toMatchObject({ sessionId: w.sessionId, mode: 'exclusive', limit: 1 });
    expect(BigInt(gw.fencingToken)).toBeGreaterThan(BigInt(g2.fencingToken));
  });

  test('a store without the multi-holder rules is asked for mutexes only: the rest is a 400 before anything is tried', async () => {
    const clock = new SteppedClock();
    const store = new MemoryLockStore({ now: () => clock.now() });
    Object.defineProperty(store, 'multiHolder', { value: false });
    const service = new LockService(store, recordingEvents().events, { clock, random: () => 0.5 });
    services.push(service);
    await service.start();
    const view = await service.openSession({ ttlMillis: 60_000, owner: 'a' }, ctx);
    const a = { sessionId: view.sessionId, tokenHash: hashSessionToken(view.sessionToken) };
    for (const holding of [{ mode: 'shared' as const }, { limit: 4 }]) {
      expect(await service.acquire({ key: 'k', session: a, ttlMillis: 30_000, waitMillis: 0, ...holding }, ctx).catch((e: unknown) => e)).toBeInstanceOf(ValidationFailedError);
    }
    expect((await service.readLock('k')).held).toBe(false);
    expect(await service.acquire({ key: 'k', session: a, ttlMillis: 30_000, waitMillis: 0, limit: 1 }, ctx)).toMatchObject({ mode: 'exclusive', limit: 1 });
  });
});
