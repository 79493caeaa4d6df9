/**
 * Availability SLO S1 from scraped counters: over L4, L5 and L6, the share of
 * answers that were not `not_leader` or `error`. A store wrapper injects those
 * failures on chosen calls; the SLI the test computes from /metrics — the same
 * sums the PromQL in C4 takes — must equal the injected ratio exactly.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { METRICS, SLO_S1 } from '../../contract/metric-table.js';
import { NotLeaderError } from '../../lock/errors.js';
import type { LockStore } from '../../lock/store/spi.js';
import { httpClient, type Answer } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { countsOf, scrape, seriesId, type Scrape } from './support/scrape.js';

type Fault = 'not_leader' | 'error';

/** The next call of `op` fails as planned; every other call passes through. */
class FaultPlan {
  private readonly planned = new Map<string, Fault>();
  next(op: 'tryAcquire' | 'renew' | 'release', fault: Fault) {
    this.planned.set(op, fault);
  }
  wrap(store: LockStore): LockStore {
    const planned = this.planned;
    return new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        const fault = planned.get(String(property));
        if (!fault) return value.bind(target);
        return async () => {
          planned.delete(String(property));
          throw fault === 'not_leader' ? new NotLeaderError('injected: read-only backend') : new Error('injected: store bug');
        };
      },
    });
  }
}

const plan = new FaultPlan();
let server: TestServer;
let api: ReturnType<typeof httpClient>;
beforeAll(async () => {
  server = await startServer({ store: 'embedded', wrapStore: (store) => plan.wrap(store) });
  api = httpClient(server.url);
});
afterAll(async () => {
  await server?.stop();
});

/** The S1 sums of C4's PromQL, over the counter increases between two scrapes. */
function s1(before: Scrape, after: Scrape) {
  const increase = (name: string, outcomes?: readonly string[]) => {
    const old = countsOf(before, name);
    let sum = 0;
    for (const [id, value] of countsOf(after, name)) {
      const outcome = (Object.fromEntries(JSON.parse(id) as [string, string][]) as { outcome: string }).outcome;
      if (!outcomes || outcomes.includes(outcome)) sum += value - (old.get(id) ?? 0);
    }
    return sum;
  };
  const bad = SLO_S1.badOutcomes;
  const requests =
    increase(METRICS.lockAcquireSeconds.name) + increase(METRICS.lockRenewTotal.name) + increase(METRICS.lockReleaseTotal.name);
  const errors =
    increase(METRICS.lockAcquireSeconds.name, bad) + increase(METRICS.lockRenewTotal.name, bad) + increase(METRICS.lockReleaseTotal.name, bad);
  return { requests, errors };
}

test('the S1 SLI from scraped counters equals the injected not_leader / error ratio exactly', async () => {
  const before = await scrape(server.url);
  let sent = 0;
  let injected = 0;
  const send = async (call: Promise<Answer>, status: number) => {
    const answer = await call;
    expect(answer.status).toBe(status);
    sent++;
    if (status >= 500) injected++;
    return answer;
  };
  const holder = (await api.openSession({ owner: 'slo-holder' })).body.sessionId as string;
  const rival = (await api.openSession({ owner: 'slo-rival' })).body.sessionId as string;

  for (let round = 0; round < 10; round++) {
    const key = `slo/${round}`;
    const grant = (await send(api.acquire(key, { sessionId: holder }), 200)).body as { fencingToken: string };
    await send(api.acquire(key, { sessionId: rival }), 409); // contention is a correct answer
    await send(api.renew(key, { sessionId: holder, fencingToken: grant.fencingToken }), 200);
    await send(api.renew(key, { sessionId: holder, fencingToken: '999999999' }), 409); // lost is too
    if (round % 3 === 0) {
      plan.next('tryAcquire', 'not_leader');
      await send(api.acquire(`${key}/nl`, { sessionId: holder }), 503);
    }
    if (round % 4 === 0) {
      plan.next('tryAcquire', 'error');
      await send(api.acquire(`${key}/err`, { sessionId: holder }), 500);
    }
    if (round % 5 === 0) {
      plan.next('renew', 'not_leader'); // L5 has no not_leader outcome: it counts as error
      await send(api.renew(key, { sessionId: holder, fencingToken: grant.fencingToken }), 503);
      plan.next('release', 'error');
      await send(api.release(key, { sessionId: holder, fencingToken: grant.fencingToken }), 500);
    }
    await send(api.release(key, { sessionId: holder, fencingToken: grant.fencingToken }), 200);
  }
  const after = await scrape(server.url);

  const { requests, errors } = s1(before, after);
  expect(injected).toBe(4 + 3 + 2 + 2);
  expect({ requests, errors }).toEqual({ requests: sent, errors: injected });
  expect(1 - errors / requests).toBe(1 - injected / sent);

  // The store saw what was injected: its histogram records not_leader apart from error.
  const store = countsOf(after, METRICS.lockStoreSeconds.name);
  const old = countsOf(before, METRICS.lockStoreSeconds.name);
  const storeIncrease = (op: string, outcome: string) => {
    const id = seriesId({ backend: 'embedded', op, outcome });
    return store.get(id)! - (old.get(id) ?? 0);
  };
  expect(storeIncrease('try_acquire', 'not_leader')).toBe(4);
  expect(storeIncrease('try_acquire', 'error')).toBe(3);
  expect(storeIncrease('renew', 'not_leader')).toBe(2);
  expect(storeIncrease('release', 'error')).toBe(2);
  // Each 500 is logged once with its request id; a 503 is an answer, not a bug.
  expect(server.logs.filter((l) => l.event === 'request_failed')).toHaveLength(3 + 2);
});
