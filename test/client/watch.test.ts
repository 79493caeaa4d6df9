/**
 * Issue 23 acceptance, watch (through the SDK's `client.observe`, built on L8): 10 observers spread
 * over two instances (postgres, etcd; embedded has one) see each of 50 leader changes made
 * alternately through both instances. The changes are handoffs (the next holder waits on the
 * server, the current one releases), made one at a time: every observer must yield each grant
 * before the next change, so "no change missed" is checked exactly — each observer's items are
 * the sequence of grants, term, owner and value, in order. Twice, every observer's parked poll is
 * dropped (a reset connection) just before a change: it resumes from `after` and still yields it.
 * Prints the wake latency (grant answered to the changer → each observer's item) p50/p99, split by
 * whether the observer's instance is the one that made the grant.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LockClient, type Leader, type LockHandle, type LockSession } from '../../client/index.js';
import { startPair } from '../support/fleet-pair.js';
import { startServer, type StoreName, type TestServer } from '../support/server.js';
import { STORES } from '../support/stores.js';
import { DroppingTransport } from './support/dropping-transport.js';

const CHANGES = 50;
const OBSERVERS = 10;
/** Changes made while every observer's poll was just dropped. */
const DROPPED_BEFORE = new Set([15, 35]);

async function startServers(store: StoreName): Promise<TestServer[]> {
  return store === 'embedded' ? [await startServer({ store })] : startPair(store);
}

interface Grant {
  term: string;
  owner: string;
  value: string;
  instance: number;
  answeredAt: number;
}

interface Observer {
  instance: number;
  transport: DroppingTransport;
  items: { leader: Leader | null; at: number }[];
  stop: AbortController;
  done: Promise<void>;
}

/** Wakes waiters whenever an observer yields an item: no polling of the test's own state. */
class Progress {
  readonly #waiters = new Set<() => void>();
  notify(): void {
    for (const wake of this.#waiters) wake();
  }
  until(condition: () => boolean, timeoutMillis: number, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!condition()) return;
        this.#waiters.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`${what}: not within ${timeoutMillis} ms`));
      }, timeoutMillis);
      this.#waiters.add(check);
      check();
    });
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

describe.each(STORES)('watch on %s', (store) => {
  let servers: TestServer[] = [];
  const clients: LockClient[] = [];
  const sessions: LockSession[] = [];

  beforeAll(async () => {
    servers = await startServers(store);
  });
  afterAll(async () => {
    for (const session of sessions) await session.close().catch(() => {});
    for (const server of servers) await server.stop();
  });

  test(`${OBSERVERS} observers over the instances see each of ${CHANGES} leader changes made through both; dropped polls resume from after`, async () => {
    const urls = servers.map((s) => s.url);
    const key = `watch/${store}`;
    const changers = await Promise.all(
      [0, 1].map(async (i) => {
        const client = new LockClient({ baseUrl: urls[i % urls.length]! });
        clients.push(client);
        const session = await client.openSession({ ttlMillis: 30_000, owner: `changer-${i}` });
        sessions.push(session);
        return { client, session, instance: i % urls.length, owner: `changer-${i}` };
      }),
    );
    const grants: Grant[] = [];
    let holder: LockHandle | null = await changers[0]!.session.acquire(key, { value: 'v-0' });
    expect(holder).not.toBeNull();
    grants.push({ term: holder!.fencingToken, owner: 'changer-0', value: 'v-0', instance: changers[0]!.instance, answeredAt: performance.now() });

    const progress = new Progress();
    const observers: Observer[] = Array.from({ length: OBSERVERS }, (_, i) => {
      const instance = i % urls.length;
      const transport = new DroppingTransport(urls[instance]!);
      const client = new LockClient({ transport });
      const items: Observer['items'] = [];
      const stop = new AbortController();
      const done = (async () => {
        for await (const leader of client.observe(key, { signal: stop.signal, waitMillis: 20_000 })) {
          items.push({ leader, at: performance.now() });
          progress.notify();
        }
      })();
      return { instance, transport, items, stop, done };
    });
    const itemOf = (o: Observer, term: string) => o.items.find((item) => item.leader?.term === term);
    await progress.until(() => observers.every((o) => itemOf(o, grants[0]!.term)), 30_000, 'every observer sees the first holder');

    const latencies: { across: boolean; millis: number; dropped: boolean }[] = [];
    for (let k = 1; k <= CHANGES; k += 1) {
      const current = changers[(k - 1) % 2]!;
      const next = changers[k % 2]!;
      // The next holder waits on the server for the key; the current one then hands it over by releasing.
      const waiting = next.session.acquire(key, { value: `v-${k}`, policy: { waitMillis: 10_000, totalBudgetMillis: 20_000 } });
      for (const deadline = performance.now() + 10_000; (await current.client.readLock(key)).waiterCount < 1; ) {
        if (performance.now() > deadline) throw new Error(`change ${k}: the next holder never waited`);
      }
      if (DROPPED_BEFORE.has(k)) {
        await progress.until(() => observers.every((o) => o.transport.inFlight > 0), 10_000, 'every observer parked');
        for (const o of observers) o.transport.dropAll();
      }
      await current.session.release(holder!);
      holder = await waiting;
      expect(holder, `change ${k}`).not.toBeNull();
      const grant = { term: holder!.fencingToken, owner: next.owner, value: `v-${k}`, instance: next.instance, answeredAt: performance.now() };
      grants.push(grant);
      await progress.until(() => observers.every((o) => itemOf(o, grant.term)), 15_000, `change ${k} (term ${grant.term}) seen by every observer`);
      for (const o of observers) {
        latencies.push({ across: o.instance !== grant.instance, millis: itemOf(o, grant.term)!.at - grant.answeredAt, dropped: DROPPED_BEFORE.has(k) });
      }
    }
    for (const o of observers) o.stop.abort();
    await Promise.all(observers.map((o) => o.done));
    await changers[CHANGES % 2]!.session.release(holder!);

    // Each observer's items are the grants, in order, with their owner and value (null only while free).
    const terms = grants.map((g) => g.term);
    for (const [i, o] of observers.entries()) {
      expect(o.items.flatMap((item) => (item.leader === null ? [] : [item.leader.term])), `observer ${i}`).toEqual(terms);
      for (const item of o.items) {
        if (item.leader === null) continue;
        const grant = grants.find((g) => g.term === item.leader!.term)!;
        expect(item.leader).toEqual({ term: grant.term, owner: grant.owner, value: grant.value });
      }
    }
    for (let i = 1; i < terms.length; i += 1) expect(BigInt(terms[i]!)).toBeGreaterThan(BigInt(terms[i - 1]!));
    // The drops happened: every observer lost a parked poll twice and still saw every change.
    for (const o of observers) expect(o.transport.dropped).toBeGreaterThanOrEqual(DROPPED_BEFORE.size);

    const report = (label: string, rows: typeof latencies) => {
      if (rows.length === 0) return;
      const sorted = rows.map((r) => r.millis).sort((a, b) => a - b);
      console.log(
        `[watch ${store}] wake latency ${label}: n=${sorted.length} p50=${percentile(sorted, 50).toFixed(1)} ms p99=${percentile(sorted, 99).toFixed(1)} ms max=${sorted.at(-1)!.toFixed(1)} ms`,
      );
    };
    report('across instances', latencies.filter((l) => l.across && !l.dropped));
    report('same instance', latencies.filter((l) => !l.across && !l.dropped));
    report('after a dropped poll', latencies.filter((l) => l.dropped));
  }, 240_000);
});
