/**
 * Time (v2) on etcd, through whole servers: two servers on one etcd, one with
 * its clock 20 s ahead (and, separately, 20 s behind), injected through core's
 * Clock seam. Over 200 acquire/renew/heartbeat cycles through both: no early
 * grant (a live lock is never granted to another session), no early expiry
 * (heartbeated sessions and renewed locks stay live, no sweeper ends a session),
 * and the fenced resource never sees a token go backwards. The store-level twin
 * (etcd-clock-skew.test.ts) skews the store's own advisory clock instead.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { systemClock, type Clock } from '../../lock/core/clock.js';
import { FencedResourceRecorder } from '../support/fenced-resource.js';
import { httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';

const CYCLES = 200;
const WORKERS = 4;
const SESSION_TTL = 3000;
const LOCK_TTL = 2000;

const skewed = (offsetMillis: number): Clock => ({ now: () => Date.now() + offsetMillis, sleep: systemClock.sleep });

describe.each([
  ['20 s ahead', 20_000],
  ['20 s behind', -20_000],
])('etcd: one server %s', (_label, offset) => {
  let normal: TestServer;
  let skewedServer: TestServer;
  beforeAll(async () => {
    normal = await startServer({ store: 'etcd' });
    skewedServer = await startServer({ store: 'etcd', env: { ETCD_ENDPOINTS: normal.etcdEndpoints!.join(',') }, clock: skewed(offset) });
  });
  afterAll(async () => {
    await skewedServer?.stop();
    await normal?.stop();
  });

  test(`${CYCLES} acquire/renew/heartbeat cycles: no early grant, no early expiry`, async () => {
    const apis = { normal: httpClient(normal.url), skewed: httpClient(skewedServer.url) };
    const recorder = new FencedResourceRecorder();
    const problems: string[] = [];

    const worker = async (w: number) => {
      const holder = (await apis.skewed.openSession({ ttlMillis: SESSION_TTL, owner: `holder-${w}` })).body.sessionId as string;
      const rival = (await apis.normal.openSession({ ttlMillis: SESSION_TTL, owner: `rival-${w}` })).body.sessionId as string;
      const tokens = { [holder]: apis.skewed.sessionToken(holder)!, [rival]: apis.normal.sessionToken(rival)! };
      const as = (id: string) => ({ authorization: `Bearer ${tokens[id]}` });
      let beating = true;
      const beats = (async () => {
        while (beating) {
          // Each session heartbeated through the server that did not open it.
          for (const [api, id] of [[apis.normal, holder], [apis.skewed, rival]] as const) {
            const beat = await api.heartbeat(id, as(id));
            if (beat.status !== 200) problems.push(`heartbeat ${id}: ${beat.status} ${JSON.stringify(beat.body)}`);
          }
          await new Promise((resolve) => setTimeout(resolve, 700));
        }
      })();
      try {
        for (let cycle = w; cycle < CYCLES; cycle += WORKERS) {
          const key = `skew/${offset}/${cycle}`;
          const [first, second] = cycle % 2 === 0 ? [apis.skewed, apis.normal] : [apis.normal, apis.skewed];
          const grant = await first.acquire(key, { sessionId: holder, ttlMillis: LOCK_TTL }, as(holder));
          if (grant.status !== 200) {
            problems.push(`cycle ${cycle}: holder acquire ${grant.status} ${JSON.stringify(grant.body)}`);
            continue;
          }
          recorder.write(key, grant.body.fencingToken);
          const early = await second.acquire(key, { sessionId: rival }, as(rival));
          if (early.status !== 409 || early.body.error.code !== 'LOCK_CONTENDED') {
            problems.push(`cycle ${cycle}: early grant? rival got ${early.status} ${JSON.stringify(early.body)}`);
            if (early.status === 200) recorder.write(key, early.body.fencingToken);
          }
          const renewed = await second.renew(key, { sessionId: holder, fencingToken: grant.body.fencingToken }, as(holder));
          if (renewed.status !== 200 || renewed.body.fencingToken !== grant.body.fencingToken || renewed.body.ttlMillis !== LOCK_TTL) {
            problems.push(`cycle ${cycle}: renew ${renewed.status} ${JSON.stringify(renewed.body)}`);
          }
          const still = await first.read(key);
          if (!still.body.held || still.body.fencingToken !== grant.body.fencingToken) problems.push(`cycle ${cycle}: expired early: ${JSON.stringify(still.body)}`);
          recorder.write(key, grant.body.fencingToken);
          const released = await second.release(key, { sessionId: holder, fencingToken: grant.body.fencingToken }, as(holder));
          if (released.status !== 200) problems.push(`cycle ${cycle}: release ${released.status} ${JSON.stringify(released.body)}`);
          const next = await first.acquire(key, { sessionId: rival }, as(rival));
          if (next.status !== 200) {
            problems.push(`cycle ${cycle}: rival after release ${next.status} ${JSON.stringify(next.body)}`);
            continue;
          }
          recorder.write(key, next.body.fencingToken);
          await second.release(key, { sessionId: rival, fencingToken: next.body.fencingToken }, as(rival));
        }
      } finally {
        beating = false;
        await beats;
      }
      for (const id of [holder, rival]) {
        const info = (await apis.skewed.admin(skewedServer.viewerToken).listSessions('?limit=1000')).body.items.find(
          (s: { sessionId: string }) => s.sessionId === id,
        );
        if (!info) problems.push(`session ${id} ended early`);
      }
    };

    const started = Date.now();
    await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
    console.log(`etcd, clock ${offset > 0 ? '+' : ''}${offset} ms: ${CYCLES} cycles in ${Date.now() - started} ms`);
    expect(problems.slice(0, 10)).toEqual([]);
    expect(recorder.rejected).toEqual([]);
    expect(recorder.accepted).toBe(3 * CYCLES);
    const ttlEnds = [...normal.logs, ...skewedServer.logs].filter((l) => l.event === 'session_expired' && l.cause === 'ttl');
    expect(ttlEnds).toEqual([]);
  }, 180_000);
});
