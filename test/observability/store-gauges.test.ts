/**
 * lock_held and lock_sessions_active are the store's figures, not one
 * process's memory: locks taken through one server instance count on the
 * /metrics of another instance on the same PostgreSQL database. And /metrics
 * keeps answering with the last known figures while the store cannot count.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { loadConfig } from '../../lock/config.js';
import { NotLeaderError } from '../../lock/errors.js';
import { openStore } from '../../lock/store/open-store.js';
import type { LockStore } from '../../lock/store/spi.js';
import { eventually, httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { countsOf, scrape, seriesId } from './support/scrape.js';

/**
 * Short for the test (production's default is 5 s): the figures catch up within one refresh on a quiet machine,
 * and the waits below allow 30 (15 s: a loaded CI machine can stall a child server for seconds), so they tell a refreshed
 * gauge from a stale one (which never catches up) without racing a busy machine.
 */
const REFRESH_MILLIS = 500;
const env = { HOLDFAST_STORE_GAUGE_REFRESH_MS: String(REFRESH_MILLIS) };
let storeDown = false;
let first: TestServer;
let second: TestServer;

/** The second instance's store: the first one's database, with summaries failing on demand. */
function failingSummaries(store: LockStore): LockStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (property !== 'summary') return value.bind(target);
      return (...args: unknown[]) => (storeDown ? Promise.reject(new NotLeaderError('injected')) : value.apply(target, args));
    },
  });
}

beforeAll(async () => {
  first = await startServer({ store: 'postgres', env });
  const shared = await openStore(loadConfig({ HOLDFAST_STORE: 'postgres', DATABASE_URL: first.databaseUrl! }));
  second = await startServer({
    store: 'postgres',
    env,
    // The harness opened a fresh database for this instance; point it at the first one's instead.
    wrapStore: (own) => {
      void own.close();
      return failingSummaries(shared);
    },
  });
});
afterAll(async () => {
  await second?.stop();
  await first?.stop();
});

const POSTGRES = seriesId({ backend: 'postgres' });
/** lock_held is split by policy (issue 26); these servers have no policies file: every key is policy="". */
const HELD = seriesId({ backend: 'postgres', policy: '' });
const seriesOf = (name: string) => (name === 'lock_held' ? HELD : POSTGRES);
const gauge = async (server: TestServer, name: string) => countsOf(await scrape(server.url), name).get(seriesOf(name));

test('locks and sessions taken through one instance show on the other once it refreshed', async () => {
  const api = httpClient(first.url);
  for (let i = 0; i < 3; i++) {
    const sessionId = (await api.openSession({ owner: `gauges-${i}` })).body.sessionId as string;
    for (let k = 0; k <= i; k++) expect((await api.acquire(`gauges/${i}/${k}`, { sessionId })).status).toBe(200);
  }
  // The second instance never served a request: its figures can only come from the store.
  const started = Date.now();
  await eventually(async () => (await gauge(second, 'lock_held')) === 6, REFRESH_MILLIS * 30, 50);
  console.log(`store gauges: the other instance showed the 6 locks ${Date.now() - started} ms after they were taken (refresh ${REFRESH_MILLIS} ms)`);
  expect(await gauge(second, 'lock_sessions_active')).toBe(3);
  await eventually(async () => (await gauge(first, 'lock_held')) === 6, REFRESH_MILLIS * 30, 50);
});

test('while the store cannot count, /metrics answers with the last figures and counts the failures', async () => {
  const held = await gauge(second, 'lock_held');
  expect(held).toBe(6);
  storeDown = true;
  try {
    const failedSummaries = seriesId({ backend: 'postgres', op: 'summary', outcome: 'not_leader' });
    const page = await eventually(async () => {
      const result = await scrape(second.url); // throws unless /metrics answers 200
      return (countsOf(result, 'lock_store_seconds').get(failedSummaries) ?? 0) > 0 ? result : undefined;
    }, REFRESH_MILLIS * 30, 50);
    expect(countsOf(page, 'lock_held').get(HELD)).toBe(held);
    expect(countsOf(page, 'lock_sessions_active').get(POSTGRES)).toBe(3);
  } finally {
    storeDown = false;
  }
});
