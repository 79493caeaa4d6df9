/**
 * Fencing under concurrency against real PostgreSQL: 32 sessions × 200
 * acquire/release cycles over 8 keys, with a fenced-resource oracle.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { FencedResourceRecorder, findOverlaps, findTokenOrderViolations, type ObservedGrant } from '../support/fenced-resource.js';
import { httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';

const SESSIONS = 32;
const CYCLES = Number(process.env.FENCING_CYCLES ?? 200);
const KEYS = Array.from({ length: 8 }, (_, i) => `payout/account-${i}`);

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ store: 'postgres' });
});
afterAll(async () => {
  await server?.stop();
});

test(`${SESSIONS} sessions × ${CYCLES} cycles over ${KEYS.length} keys: no rejected write, increasing tokens, no overlap`, async () => {
  const api = httpClient(server.url);
  const recorder = new FencedResourceRecorder();
  const grants: ObservedGrant[] = [];
  const unexpected: string[] = [];

  const worker = async (index: number) => {
    const session = (await api.openSession({ owner: `fencing-worker-${index}`, ttlMillis: 300000 })).body.sessionId as string;
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const key = KEYS[(index + cycle) % KEYS.length]!;
      for (;;) {
        const requestedAt = performance.now();
        const answer = await api.acquire(key, { sessionId: session, waitMillis: 5000 });
        if (answer.status === 409 && answer.body.error.code === 'LOCK_CONTENDED') continue;
        if (answer.status !== 200) {
          unexpected.push(`acquire ${answer.status} ${JSON.stringify(answer.body)}`);
          return;
        }
        const grantedAt = performance.now();
        recorder.write(key, answer.body.fencingToken);
        const releasedAt = performance.now();
        const released = await api.release(key, { sessionId: session, fencingToken: answer.body.fencingToken });
        if (released.status !== 200) unexpected.push(`release ${released.status} ${JSON.stringify(released.body)}`);
        grants.push({ key, token: BigInt(answer.body.fencingToken), requestedAt, grantedAt, releasedAt });
        break;
      }
    }
  };

  const started = performance.now();
  await Promise.all(Array.from({ length: SESSIONS }, (_, i) => worker(i)));
  const seconds = (performance.now() - started) / 1000;
  console.log(`fencing: ${grants.length} grants in ${seconds.toFixed(1)} s (${(grants.length / seconds).toFixed(0)} cycles/s)`);

  expect(unexpected.slice(0, 5)).toEqual([]);
  expect(grants).toHaveLength(SESSIONS * CYCLES);
  expect(recorder.rejected).toEqual([]);
  expect(recorder.accepted).toBe(SESSIONS * CYCLES);
  expect(findTokenOrderViolations(grants)).toEqual([]);
  expect(findOverlaps(grants)).toEqual([]);
}, 600_000);
