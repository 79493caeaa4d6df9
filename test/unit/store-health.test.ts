/**
 * Issue 20: one view of the store's health in core. A store that refuses or
 * hangs turns it down; while down, acquires and the other gated calls are
 * refused with NotLeaderError without reaching the store, while heartbeats and
 * renewals are still sent; the probe brings it back without any request.
 * Outcomes only (what reached the store, which error, which events), no timing.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LockEvents } from '../../contract/lock-events.js';
import { LockService } from '../../lock/core/lock-service.js';
import { hashSessionToken } from '../../lock/core/session-token.js';
import { StoreHealth } from '../../lock/core/store-health.js';
import { NotLeaderError } from '../../lock/errors.js';
import type { LockStore } from '../../lock/store/spi.js';
import { openSqlStore } from '../support/sql-stores.js';

type Mode = 'ok' | 'refuse' | 'hang';

/** The embedded store behind a switch: answer, refuse as unreachable, or never answer. */
function switchable(store: LockStore) {
  const hung: (() => void)[] = [];
  const state = {
    mode: 'ok' as Mode,
    calls: new Map<string, number>(),
    /** Lets every hung call through to the store (the black hole forwards again). */
    resume() {
      this.mode = 'ok';
      for (const proceed of hung.splice(0)) proceed();
    },
  };
  // The fleet wait state (store.fleet) is the same database: it refuses and hangs with the rest.
  const switched = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(object, property, receiver) {
        const value = Reflect.get(object, property, receiver);
        if (property === 'fleet' && value) return fleet;
        if (typeof value !== 'function' || property === 'backend' || property === 'close' || property === 'init') return value;
        return (...args: unknown[]) => {
          state.calls.set(String(property), (state.calls.get(String(property)) ?? 0) + 1);
          if (state.mode === 'refuse') return Promise.reject(new NotLeaderError('connect ECONNREFUSED 127.0.0.1:5432'));
          if (state.mode === 'hang') return new Promise((resolve) => hung.push(() => resolve((value as (...a: unknown[]) => unknown).apply(object, args))));
          return (value as (...a: unknown[]) => unknown).apply(object, args);
        };
      },
    });
  const fleet = store.fleet ? switched(store.fleet) : undefined;
  const proxy = switched(store);
  return { store: proxy, state, count: (method: string) => state.calls.get(method) ?? 0 };
}

function recordingEvents() {
  const facts: string[] = [];
  const waiting = { up: null as (() => void) | null, down: null as (() => void) | null };
  const events = new Proxy({} as LockEvents, {
    get: (_target, property) => (fact: unknown) => {
      if (property === 'storeDown') {
        facts.push('down');
        waiting.down?.();
      }
      if (property === 'storeUp') {
        facts.push('up');
        waiting.up?.();
      }
      return fact;
    },
  });
  const nextUp = () => new Promise<void>((resolve) => (waiting.up = resolve));
  const nextDown = () => new Promise<void>((resolve) => (waiting.down = resolve));
  return { events, facts, nextUp, nextDown };
}

// One embedded database for the file (PGlite takes seconds to start on a busy machine); each test
// has its own service, sessions and keys on it.
let shared: LockStore;
beforeAll(async () => {
  shared = (await openSqlStore('embedded')).store;
});
afterAll(async () => {
  await shared?.close();
});
const services: { service: LockService; state: { resume(): void } }[] = [];
afterEach(async () => {
  for (const { service, state } of services.splice(0)) {
    state.resume(); // leaving the fleet needs a store that answers
    await service.stop();
  }
});

let tests = 0;
async function serviceOn(mode: Mode) {
  const prefix = `t${++tests}/`;
  const key = (name: string) => prefix + name;
  const inner = switchable(shared);
  const recorded = recordingEvents();
  const service = new LockService(inner.store, recorded.events, { storeHealth: { callTimeoutMillis: 300, probeIntervalMillis: 20 } });
  services.push({ service, state: inner.state });
  await service.start(); // joins the fleet registry: waits count only while their instance is live
  const session = await service.openSession({ ttlMillis: 60_000, owner: 'health' }, { requestId: 't' });
  const credential = { sessionId: session.sessionId, tokenHash: hashSessionToken(session.sessionToken) };
  const held = await service.acquire({ key: key('held'), session: credential, ttlMillis: 60_000, waitMillis: 0 }, { requestId: 't' });
  inner.state.mode = mode;
  /**
   * The first acquire after the switch: a refused store answers it NotLeaderError; a hung one never
   * answers it (the call is not abandoned), but turns the state down once it outlives the timeout.
   */
  const firstCallAfterSwitch = async () => {
    const down = recorded.nextDown();
    const first = service.acquire({ key: key('k'), session: credential, ttlMillis: 10_000, waitMillis: 0 }, { requestId: 't' }).catch((e: unknown) => e);
    await down;
    return mode === 'hang' ? 'unanswered' : await first;
  };
  return { service, inner, recorded, credential, held, key, firstCallAfterSwitch };
}

describe.each<Mode>(['refuse', 'hang'])('a store that starts to %s', (mode) => {
  it('turns the state down on the first failed call; gated calls are then refused without reaching the store', async () => {
    const { service, inner, recorded, credential, key, firstCallAfterSwitch } = await serviceOn(mode);
    const first = await firstCallAfterSwitch();
    if (mode === 'refuse') expect(first).toBeInstanceOf(NotLeaderError);
    expect(service.storeHealth.up).toBe(false);
    expect(recorded.facts).toEqual(['down']);

    const triesBefore = inner.count('tryAcquire');
    const opensBefore = inner.count('openSession');
    for (let i = 0; i < 20; i++) {
      const refused = await service.acquire({ key: key(`k${i}`), session: credential, ttlMillis: 10_000, waitMillis: 5_000 }, { requestId: 't' }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(NotLeaderError);
      expect((refused as NotLeaderError).retryAfterSeconds).toBe(1);
    }
    await expect(service.openSession({ ttlMillis: 10_000, owner: 'x' }, { requestId: 't' })).rejects.toBeInstanceOf(NotLeaderError);
    await expect(service.checkReady()).rejects.toBeInstanceOf(NotLeaderError);
    expect(inner.count('tryAcquire')).toBe(triesBefore);
    expect(inner.count('openSession')).toBe(opensBefore);
    // A refused acquire charged nothing and recorded no wait.
    expect(service.waiters.countForSession(credential.sessionId)).toBe(0);
  });

  it('still sends heartbeats and renewals while down, and the probe brings the state back without a request', async () => {
    const { service, inner, recorded, credential, held, key, firstCallAfterSwitch } = await serviceOn(mode);
    await firstCallAfterSwitch();
    expect(service.storeHealth.up).toBe(false);

    const heartbeats = inner.count('heartbeat');
    const renewals = inner.count('renew');
    const heartbeat = service.heartbeat(credential);
    const renewal = service.renew({ key: key('held'), session: credential, fencingToken: held.fencingToken }, { requestId: 't' });
    if (mode === 'refuse') {
      await expect(heartbeat).rejects.toBeInstanceOf(NotLeaderError);
      await expect(renewal).rejects.toBeInstanceOf(NotLeaderError);
    } else {
      heartbeat.catch(() => {});
      renewal.catch(() => {});
    }
    // Sent to the store although it is counted down: either may save a session or a lock.
    expect(inner.count('heartbeat')).toBe(heartbeats + 1);
    expect(inner.count('renew')).toBe(renewals + 1);
    const pings = inner.count('ping');
    while (inner.count('ping') < pings + 2) await new Promise((r) => setTimeout(r, 5)); // the probe keeps pinging while down
    expect(service.storeHealth.up).toBe(false);

    const up = recorded.nextUp();
    inner.state.resume(); // the store answers again (hung calls end, as the store's own timeouts end them)
    await up;
    expect(service.storeHealth.up).toBe(true);
    expect(recorded.facts).toEqual(['down', 'up']);
    const grant = await service.acquire({ key: key('k'), session: credential, ttlMillis: 10_000, waitMillis: 0 }, { requestId: 't' });
    expect(BigInt(grant.fencingToken)).toBeGreaterThan(BigInt(held.fencingToken));
    // The lock taken before the outage survived it.
    expect((await service.readLock(key('held'))).fencingToken).toBe(held.fencingToken);
  });
});

async function parkedWaiter(service: LockService, inner: ReturnType<typeof switchable>, key: string, waitMillis: number) {
  const other = await service.openSession({ ttlMillis: 60_000, owner: 'waiter' }, { requestId: 't' });
  const waiting = { sessionId: other.sessionId, tokenHash: hashSessionToken(other.sessionToken) };
  const settled = { done: false };
  const wait = service
    .acquire({ key, session: waiting, ttlMillis: 10_000, waitMillis }, { requestId: 't' })
    .catch((e: unknown) => e)
    .finally(() => (settled.done = true));
  // Recorded in the store's fleet-wide wait state.
  while ((await service.readLock(key)).waiterCount !== 1) await new Promise((r) => setTimeout(r, 5));
  return { wait, settled };
}

async function turnDown(service: LockService, inner: ReturnType<typeof switchable>, recorded: ReturnType<typeof recordingEvents>, credential: { sessionId: string; tokenHash: string }) {
  const down = recorded.nextDown();
  inner.state.mode = 'refuse';
  // A failed call makes the store suspect and the refused ping turns it down (a call answered in
  // between would make that failure no suspicion: then the next heartbeat's failure is one).
  while (service.storeHealth.up) {
    await service.heartbeat(credential).catch(() => {});
    await Promise.race([down, new Promise((r) => setTimeout(r, 20))]);
  }
}

it('a wait under way rides out an outage and is granted once the store returns and the key is released', async () => {
  const { service, inner, recorded, credential, held, key } = await serviceOn('ok');
  const { wait, settled } = await parkedWaiter(service, inner, key('held'), 600_000);
  await turnDown(service, inner, recorded, credential);
  const pings = inner.count('ping');
  while (inner.count('ping') < pings + 2) await new Promise((r) => setTimeout(r, 5)); // the outage goes on a while
  expect(settled.done).toBe(false);
  // A new acquire is answered at once meanwhile.
  await expect(service.acquire({ key: key('other'), session: credential, ttlMillis: 10_000, waitMillis: 5_000 }, { requestId: 't' })).rejects.toBeInstanceOf(
    NotLeaderError,
  );

  const up = recorded.nextUp();
  inner.state.mode = 'ok';
  await up;
  await service.release({ key: key('held'), session: credential, fencingToken: held.fencingToken }, { requestId: 't' });
  const grant = (await wait) as { fencingToken: string };
  expect(BigInt(grant.fencingToken)).toBeGreaterThan(BigInt(held.fencingToken));
});

it('a wait whose deadline passes during an outage is answered NotLeaderError, and its wait row is ended when the store returns', async () => {
  const { service, inner, recorded, credential, key } = await serviceOn('ok');
  const { wait } = await parkedWaiter(service, inner, key('held'), 3_000);
  await turnDown(service, inner, recorded, credential);
  expect(await wait).toBeInstanceOf(NotLeaderError);
  expect(service.waiters.count(key('held'))).toBe(0);

  // The wait's end could not be written while the store refused; it is written once the store returns.
  const up = recorded.nextUp();
  inner.state.mode = 'ok';
  await up;
  while ((await service.readLock(key('held'))).waiterCount !== 0) await new Promise((r) => setTimeout(r, 5));
  expect((await service.readLock(key('held'))).waiterCount).toBe(0);
});

describe('StoreHealth: what counts as down and up', () => {
  const quiet = { down: () => {}, up: () => {} };
  const until = async (condition: () => boolean) => {
    while (!condition()) await new Promise((r) => setTimeout(r, 5));
  };

  it('a failure after which another call succeeded is not even a suspicion (a busy store is not a down one)', () => {
    let pings = 0;
    const health = new StoreHealth(async () => void pings++, quiet, { callTimeoutMillis: 1000, probeIntervalMillis: 50 });
    const slowCallSent = health.successes;
    health.succeeded(); // another call answered meanwhile
    health.failed('slow call outlived its timeout', slowCallSent);
    expect(health.up).toBe(true);
    expect(pings).toBe(0);
    health.stop();
  });

  it('a suspicion is confirmed by one ping: a store that answers it stays up, one that does not turns down', async () => {
    let answers = true;
    let pings = 0;
    const ping = async () => {
      pings++;
      if (!answers) throw new Error('connect ECONNREFUSED');
    };
    const health = new StoreHealth(ping, quiet, { callTimeoutMillis: 1000, probeIntervalMillis: 20 });
    health.failed('one statement timed out', health.successes);
    await until(() => pings === 1);
    await new Promise((r) => setImmediate(r));
    expect(health.up).toBe(true);

    answers = false;
    await until(() => !(health as unknown as { confirming: boolean }).confirming);
    health.failed('refused', health.successes);
    await until(() => !health.up);
    expect(health.cause).toBe('refused');
    // Only a ping brings it back: calls answered from a cache prove nothing.
    health.succeeded();
    expect(health.up).toBe(false);
    const pingsWhileDown = pings;
    await until(() => pings >= pingsWhileDown + 2); // the probe keeps pinging while down
    expect(health.up).toBe(false);
    answers = true;
    await until(() => health.up);
    health.stop();
  });
});
