/**
 * A release that hands the key to a wait just as the wait ends (issue 22, FIFO handoff): the
 * wait's record ends before its answer, and the end tells it of the grant. At its deadline the
 * acquire answers that grant (200, not 409); when its caller has gone, the grant stays with its session
 * (a retried L4 of that session, on any instance, is answered it; an instance that ended it instead would
 * race that retry and free a key its session was answered), and is announced. The release is made inside the wait's
 * end (a store wrapper), the one moment no timing can make deterministic otherwise.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetWaitState, LockStore, SessionCredential } from '../../lock/store/spi.js';
import { hashSessionToken } from '../../lock/core/session-token.js';
import { eventually, httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';

/**
 * Runs `beforeEnd` just before the store ends a wait's record. Each record (by beginWait or by the try) is kept with 10 s more
 * budget than its wait has, so a release made at the wait's own deadline still finds it in budget:
 * the store's view of a release landing a moment before the deadline, which the end then reveals.
 */
function withHookedWaitEnds(store: LockStore, beforeEnd: (waitId: string) => Promise<void>): LockStore {
  const fleet = store.fleet!;
  const hookedFleet = new Proxy(fleet, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property === 'beginWait') {
        return (req: Parameters<FleetWaitState['beginWait']>[0]) =>
          target.beginWait({ ...req, ...(req.deadlineMillis !== undefined ? { deadlineMillis: req.deadlineMillis + 10_000 } : {}) });
      }
      if (property === 'endWait') {
        return async (waitId: string) => {
          await beforeEnd(waitId);
          return target.endWait(waitId);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as FleetWaitState;
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'fleet') return hookedFleet;
      // A wait recorded by the try that finds the key held (FleetWaitState.recordsOnTry) gets the same 10 s.
      if (property === 'tryAcquire') {
        return (req: Parameters<LockStore['tryAcquire']>[0]) =>
          target.tryAcquire(
            req.recordWait?.deadlineMillis !== undefined ? { ...req, recordWait: { ...req.recordWait, deadlineMillis: req.recordWait.deadlineMillis + 10_000 } } : req,
          );
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('a handoff that meets the end of a wait (embedded store)', () => {
  let server: TestServer;
  let raw: LockStore;
  /** The holder's release to make when the next wait ends: what a release racing that end would do. */
  let releaseOnEnd: { key: string; session: SessionCredential; fencingToken: string } | null = null;
  beforeAll(async () => {
    server = await startServer({
      store: 'embedded',
      wrapStore: (store) => {
        raw = store;
        return withHookedWaitEnds(store, async () => {
          const release = releaseOnEnd;
          releaseOnEnd = null;
          if (release) expect((await raw.release(release)).kind).toBe('released');
        });
      },
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  async function holderAndWaiter(key: string) {
    const api = httpClient(server.url);
    const holder = (await api.openSession({ ttlMillis: 60_000 })).body.sessionId as string;
    const waiter = (await api.openSession({ ttlMillis: 60_000 })).body.sessionId as string;
    const held = await api.acquire(key, { sessionId: holder, ttlMillis: 60_000 });
    expect(held.status).toBe(200);
    const credential = { sessionId: holder, tokenHash: hashSessionToken(api.sessionToken(holder)!) };
    return { api, holder, waiter, held: held.body as { fencingToken: string }, credential };
  }

  it('at its deadline a wait answers the grant a release handed it, not 409', async () => {
    const key = 'handoff-at-deadline';
    const { api, waiter, held, credential } = await holderAndWaiter(key);
    releaseOnEnd = { key, session: credential, fencingToken: held.fencingToken };
    const answer = await api.acquire(key, { sessionId: waiter, ttlMillis: 60_000, waitMillis: 500 });
    expect(answer.status).toBe(200);
    expect(answer.body.sessionId).toBe(waiter);
    expect(BigInt(answer.body.fencingToken)).toBeGreaterThan(BigInt(held.fencingToken));
    expect((await api.read(key)).body).toMatchObject({ sessionId: waiter, fencingToken: answer.body.fencingToken, waiterCount: 0 });
  });

  it('a wait whose caller left leaves a handed grant with its session: its retried L4 is answered it, and it stays held', async () => {
    const key = 'handoff-after-abort';
    const { api, waiter, held, credential } = await holderAndWaiter(key);
    const leaving = new AbortController();
    const waiting = fetch(`${server.url}/v1/locks/${key}/acquire`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${api.sessionToken(waiter)}` },
      body: JSON.stringify({ sessionId: waiter, ttlMillis: 60_000, waitMillis: 20_000 }),
      signal: leaving.signal,
    }).catch((error: Error) => error);
    await eventually(async () => (await api.read(key)).body.waiterCount === 1);
    releaseOnEnd = { key, session: credential, fencingToken: held.fencingToken };
    leaving.abort();
    expect(await waiting).toBeInstanceOf(Error);
    // The instance is done with the wait once it has announced the grant the release handed it.
    const announced = () => server.logs.find((line) => line.event === 'lock_granted' && line.key === key && line.sessionId === waiter);
    await eventually(async () => announced() !== undefined);
    expect(releaseOnEnd).toBeNull();
    const handedToken = String(announced()!.fencingToken);
    expect(BigInt(handedToken)).toBeGreaterThan(BigInt(held.fencingToken));
    // The caller retries (here, or on another instance): answered the grant its session holds, which stays held.
    const retried = await api.acquire(key, { sessionId: waiter, ttlMillis: 60_000 });
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ sessionId: waiter, fencingToken: handedToken });
    expect((await api.renew(key, { sessionId: waiter, fencingToken: handedToken })).status).toBe(200);
    expect((await api.read(key)).body).toMatchObject({ held: true, sessionId: waiter, fencingToken: handedToken });
    // A session that never retries keeps it no longer than the session: closing it frees the key.
    expect((await api.closeSession(waiter)).status).toBe(204);
    expect((await api.read(key)).body.held).toBe(false);
  });
});
