/**
 * Issue 23 acceptance, shared (reader/writer) locks (SPEC "v3 — coordination primitives": shared
 * grants coexist, an exclusive grant excludes all others, and writers do not starve: while an
 * exclusive acquire waits on a key anywhere in the fleet, new shared acquires wait). On PostgreSQL
 * and etcd through two instances on one store, on the embedded store through its one instance;
 * real servers, the SDK as an application uses it, a fenced resource counting readers and writers
 * (support/holder-resource.ts).
 *
 * - Readers and writers cycling on one key: readers are seen inside together, a writer never
 *   with anyone; every token distinct and in order.
 * - Readers arriving continuously (a new one every 10 ms, each holding 50 ms, so the key is never
 *   free of readers): a writer that starts waiting is granted within 2 s (the criterion's bound,
 *   asserted as such; the measured wait is printed).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../client/client.js';
import type { LockHandle } from '../../client/handle.js';
import type { LockSession } from '../../client/session.js';
import { findTokenOrderViolations, type ObservedGrant } from '../support/fenced-resource.js';
import { startPair } from '../support/fleet-pair.js';
import { eventually, httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { findDuplicateTokens, FencedHolderResource, type HoldingMode } from './support/holder-resource.js';

const LOCK_TTL = 120_000;
/** Waits are server-side (woken by a release anywhere in the fleet); the budget only bounds a failure. */
const WAITING = { ttlMillis: LOCK_TTL, policy: { waitMillis: 5_000, totalBudgetMillis: 60_000 } };
const AS: Record<HoldingMode, { mode: HoldingMode }> = { shared: { mode: 'shared' }, exclusive: { mode: 'exclusive' } };

const READERS = 8;
const WRITERS = 2;
const READER_CYCLES = 60;
const WRITER_CYCLES = 15;
/**
 * A holder's work in the mixed workload: long enough that readers overlap on every store (etcd answers
 * one key's grants one at a time per instance, a few milliseconds apart: with 3 ms holds a run saw no
 * two readers inside at once), short enough to keep the run bounded.
 */
const CYCLE_HOLD_MILLIS = 20;

/** The starvation workload (the figures): a reader arrives every 10 ms and holds 50 ms. */
const ARRIVAL_EVERY_MILLIS = 10;
const READER_HOLD_MILLIS = 50;
/** Readers never run short of sessions: 50 ms holds every 10 ms keep about 5 busy, more while a writer waits. */
const READER_POOL = 40;
const WRITER_BOUND_MILLIS = 2_000;

const hold = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis));

describe.each(['embedded', 'postgres', 'etcd'] as const)('shared lock on %s', (store) => {
  let servers: TestServer[];
  let clients: LockClient[];
  const sessions: LockSession[] = [];
  beforeAll(async () => {
    servers = store === 'embedded' ? [await startServer({ store })] : await startPair(store);
    clients = servers.map((server) => new LockClient({ baseUrl: server.url }));
  });
  afterAll(async () => {
    await Promise.all(sessions.map((session) => session.close().catch(() => undefined)));
    for (const server of [...(servers ?? [])].reverse()) await server.stop();
  });

  /** A session on instance `index` mod the number of instances, closed after the file. */
  const open = async (index: number, owner: string) => {
    const session = await clients[index % clients.length]!.openSession({ ttlMillis: 20_000, owner });
    sessions.push(session);
    return session;
  };

  /** One hold through the resource: enter on the grant, work, leave before the release is sent. */
  async function holdOnce(
    session: LockSession,
    handle: LockHandle,
    mode: HoldingMode,
    resource: FencedHolderResource,
    millis: number,
    observed: { requestedAt: number; grantedAt: number },
  ): Promise<ObservedGrant & { lost: boolean }> {
    resource.enter(handle.fencingToken, mode);
    await hold(millis);
    const lost = handle.lost;
    resource.leave(handle.fencingToken);
    const releasedAt = performance.now();
    await session.release(handle);
    return { key: handle.key, token: BigInt(handle.fencingToken), ...observed, releasedAt, lost };
  }

  it(`${READERS} readers × ${READER_CYCLES} and ${WRITERS} writers × ${WRITER_CYCLES} through every instance: readers overlap, a writer never overlaps anyone`, async () => {
    const key = `shared/${store}`;
    const resource = new FencedHolderResource(1);
    const grants: (ObservedGrant & { lost: boolean })[] = [];
    const failures: string[] = [];
    const run = async (session: LockSession, mode: HoldingMode, cycles: number) => {
      for (let cycle = 0; cycle < cycles; cycle += 1) {
        const requestedAt = performance.now();
        const handle = await session.acquire(key, { ...WAITING, ...AS[mode] });
        if (handle === null) {
          failures.push(`${session.owner} cycle ${cycle}: not granted within the budget`);
          continue;
        }
        grants.push(await holdOnce(session, handle, mode, resource, CYCLE_HOLD_MILLIS, { requestedAt, grantedAt: performance.now() }));
      }
    };
    const readers = await Promise.all(Array.from({ length: READERS }, (_, i) => open(i, `reader-${i}`)));
    const writers = await Promise.all(Array.from({ length: WRITERS }, (_, i) => open(READERS + i, `writer-${i}`)));
    await Promise.all([
      ...readers.map((session) => run(session, 'shared', READER_CYCLES)),
      ...writers.map((session) => run(session, 'exclusive', WRITER_CYCLES)),
    ]);
    console.log(`[shared ${store}] ${grants.length} holds, at most ${resource.maxShared} readers at once`);

    expect(failures).toEqual([]);
    expect(grants.filter((grant) => grant.lost)).toEqual([]);
    expect(resource.violations).toEqual([]);
    expect(grants).toHaveLength(READERS * READER_CYCLES + WRITERS * WRITER_CYCLES);
    // Readers were seen holding together (not only allowed to).
    expect(resource.maxShared).toBeGreaterThanOrEqual(2);
    expect(findDuplicateTokens(grants)).toEqual([]);
    expect(findTokenOrderViolations(grants)).toEqual([]);
    for (const server of servers) expect((await httpClient(server.url).read(key)).body).toMatchObject({ holders: [], waiterCount: 0 });
  }, 600_000);

  it(`with a reader arriving every ${ARRIVAL_EVERY_MILLIS} ms holding ${READER_HOLD_MILLIS} ms, a waiting writer is granted within ${WRITER_BOUND_MILLIS} ms`, async () => {
    const key = `shared-starvation/${store}`;
    const resource = new FencedHolderResource(1);
    const pool = await Promise.all(Array.from({ length: READER_POOL }, (_, i) => open(i, `arriving-reader-${i}`)));
    const writer = await open(1, 'waiting-writer');
    const failures: string[] = [];
    const readerGrants: (ObservedGrant & { lost: boolean })[] = [];
    let arrivals = 0;
    let skipped = 0;
    const free = [...pool];
    const inFlight = new Set<Promise<void>>();
    const arrive = () => {
      const session = free.shift();
      if (!session) {
        skipped += 1;
        return;
      }
      arrivals += 1;
      const reader = (async () => {
        const requestedAt = performance.now();
        const handle = await session.acquire(key, { ...WAITING, ...AS.shared });
        if (handle === null) failures.push(`${session.owner}: not granted within the budget`);
        else readerGrants.push(await holdOnce(session, handle, 'shared', resource, READER_HOLD_MILLIS, { requestedAt, grantedAt: performance.now() }));
        free.push(session);
      })().catch((error: unknown) => {
        failures.push(`${session.owner}: ${String(error)}`);
      });
      inFlight.add(reader);
      void reader.finally(() => inFlight.delete(reader));
    };
    const arriving = setInterval(arrive, ARRIVAL_EVERY_MILLIS);
    let writerWait: { waitedMillis: number; readersInsideWhenAsked: number; arrivalsWhileWaiting: number; token: string } | undefined;
    try {
      // Readers are flowing and overlapping before the writer asks.
      await eventually(async () => resource.maxShared >= 3, 30_000, 10);
      const readersInsideWhenAsked = resource.insideNow;
      const arrivalsBefore = arrivals;
      const requestedAt = performance.now();
      const handle = await writer.acquire(key, { ...AS.exclusive, ttlMillis: LOCK_TTL, policy: { waitMillis: 10_000, totalBudgetMillis: 10_000 } });
      const grantedAt = performance.now();
      expect(handle).not.toBeNull();
      writerWait = { waitedMillis: grantedAt - requestedAt, readersInsideWhenAsked, arrivalsWhileWaiting: arrivals - arrivalsBefore, token: handle!.fencingToken };
      const written = await holdOnce(writer, handle!, 'exclusive', resource, READER_HOLD_MILLIS, { requestedAt, grantedAt });
      expect(written.lost).toBe(false);
      // Readers come back after the writer: the key was not left to it.
      await eventually(async () => readerGrants.some((grant) => grant.token > written.token), 30_000, 10);
    } finally {
      clearInterval(arriving);
      await Promise.all([...inFlight]);
    }
    if (!writerWait) throw new Error('the writer was not granted');
    console.log(
      `[shared ${store}] writer granted after ${writerWait.waitedMillis.toFixed(0)} ms with ${writerWait.readersInsideWhenAsked} readers inside when it asked ` +
        `and ${writerWait.arrivalsWhileWaiting} readers arriving while it waited; ${arrivals} reader arrivals (${skipped} found no free session), ` +
        `at most ${resource.maxShared} readers at once`,
    );

    expect(failures).toEqual([]);
    expect(resource.violations).toEqual([]);
    // The writer had to wait on live readers, and readers kept arriving while it waited.
    expect(writerWait.readersInsideWhenAsked).toBeGreaterThanOrEqual(1);
    expect(writerWait.arrivalsWhileWaiting).toBeGreaterThanOrEqual(1);
    expect(writerWait.waitedMillis).toBeLessThanOrEqual(WRITER_BOUND_MILLIS);
    expect(readerGrants.filter((grant) => grant.lost)).toEqual([]);
    expect(readerGrants.filter((grant) => grant.token > BigInt(writerWait.token)).length).toBeGreaterThanOrEqual(1);
    expect(findDuplicateTokens(readerGrants)).toEqual([]);
    for (const server of servers) expect((await httpClient(server.url).read(key)).body).toMatchObject({ holders: [], waiterCount: 0 });
  }, 300_000);
});
