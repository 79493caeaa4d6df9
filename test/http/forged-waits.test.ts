/**
 * Issue 24 items 1–2: nothing a request names is charged, recorded or waited on before the store
 * has checked its session token. Forged acquires name a victim's sessionId (L7 shows it) with a
 * wrong token and a wait budget; the store wrapper holds each forged try in flight, so every read
 * below sees them at their most dangerous moment (after arrival, before the store's refusal).
 * While they are in flight and after: the victim's waiterCount, its wait cap and the fleet wait
 * state are unchanged, its own waits are never refused 429, and no deadlock is faked.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { hashSessionToken } from '../../lock/core/session-token.js';
import type { AuthenticateResult, LockStore, TryAcquireResult } from '../../lock/store/spi.js';
import { eventually, httpClient } from '../support/http.js';
import { startServer, type StoreName, type TestServer } from '../support/server.js';

const FORGED_TOKEN = 'forged-token-the-attacker-made-up';
const FORGED = 64;

/** Holds every store check of the forged token (a try, or the credential check before it) until `release()`; counts the ones held. */
function holdingForgedTries() {
  const forgedHash = hashSessionToken(FORGED_TOKEN);
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));
  const state = { held: 0, release: () => open() };
  const wrap = (store: LockStore): LockStore =>
    new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property === 'authenticateSession') {
          // The scope check (lock/core/session-scopes.ts) asks the store about the credential first.
          return async (credential: Parameters<LockStore['authenticateSession']>[0]): Promise<AuthenticateResult> => {
            if (credential.tokenHash === forgedHash) {
              state.held++;
              await gate;
            }
            return target.authenticateSession(credential);
          };
        }
        if (property !== 'tryAcquire') return typeof value === 'function' ? value.bind(target) : value;
        return async (req: Parameters<LockStore['tryAcquire']>[0]): Promise<TryAcquireResult> => {
          if (req.session.tokenHash === forgedHash) {
            state.held++;
            await gate;
          }
          return target.tryAcquire(req);
        };
      },
    });
  return { wrap, state };
}

describe.each<StoreName>(['embedded', 'postgres', 'etcd'])('forged waits on %s', (storeName) => {
  let server: TestServer;
  let api: ReturnType<typeof httpClient>;
  const forged = holdingForgedTries();

  beforeAll(async () => {
    server = await startServer({ store: storeName, wrapStore: forged.wrap });
    api = httpClient(server.url);
  });
  afterAll(async () => {
    forged.state.release();
    await server?.stop();
  });

  test(`${FORGED} unauthenticated waits naming a victim charge, record and fake nothing`, async () => {
    const service = server.running.service;
    const holder = (await api.openSession({ ttlMillis: 60_000, owner: 'holder' })).body.sessionId as string;
    const victim = (await api.openSession({ ttlMillis: 60_000, owner: 'victim' })).body.sessionId as string;
    const other = (await api.openSession({ ttlMillis: 60_000, owner: 'other' })).body.sessionId as string;
    for (let i = 0; i < 15; i++) expect((await api.acquire(`forged/busy/${i}`, { sessionId: other, ttlMillis: 60_000 })).status).toBe(200);
    // The victim holds `mine`; the holder holds `hot` and waits (for real) on `mine`. A forged wait
    // of the victim on `hot`, were it counted, would close the cycle victim → holder → victim.
    expect((await api.acquire('forged/mine', { sessionId: victim, ttlMillis: 60_000 })).status).toBe(200);
    expect((await api.acquire('forged/hot', { sessionId: holder, ttlMillis: 60_000 })).status).toBe(200);
    const holderWait = api.acquire('forged/mine', { sessionId: holder, waitMillis: 20_000 });
    await eventually(async () => (await api.read('forged/mine')).body.waiterCount === 1);

    const read = async () => ({
      waiterCount: (await api.read('forged/hot')).body.waiterCount as number,
      victimWaits: service.waiters.countForSession(victim),
      fleetWaiters: await service.waiterTotal(),
      cycles: await service.deadlockCycles(),
    });
    const before = await read();
    expect(before).toEqual({ waiterCount: 0, victimWaits: 0, fleetWaiters: 1, cycles: 0 });

    let answeredEarly = 0;
    const attacks = Array.from({ length: FORGED }, () =>
      api
        .acquire('forged/hot', { sessionId: victim, waitMillis: 10_000 }, { authorization: `Bearer ${FORGED_TOKEN}` })
        .finally(() => answeredEarly++),
    );
    // Each forged request has reached the store's check (held there) or was answered without it.
    await eventually(async () => forged.state.held + answeredEarly === FORGED);
    expect(answeredEarly).toBe(0);
    // Every forged request is in flight now. The victim's own 15 waits (under its cap of 32) on keys
    // another session holds are admitted and wait out their budget: 409, never 429.
    const victimWaits = Array.from({ length: 15 }, (_, i) => api.acquire(`forged/busy/${i}`, { sessionId: victim, waitMillis: 300 }));
    const answers = await Promise.all(victimWaits);
    expect(answers.map((a) => a.body.error?.code)).toEqual(Array(15).fill('LOCK_CONTENDED'));
    // Past several deadlock checks (every 250 ms): the holder's real wait must not be named a victim.
    for (let i = 0; i < 8; i++) {
      expect(await read()).toEqual(before);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }

    forged.state.release();
    for (const answer of await Promise.all(attacks)) {
      expect(answer.status).toBe(401);
      expect(answer.body.error).toMatchObject({ code: 'UNAUTHENTICATED' });
    }
    expect(await read()).toEqual(before);
    // The holder's wait is still a plain wait: the victim releases and it is granted.
    const mine = (await api.read('forged/mine')).body;
    expect((await api.release('forged/mine', { sessionId: victim, fencingToken: mine.fencingToken })).status).toBe(200);
    expect((await holderWait).status).toBe(200);
  });
});
