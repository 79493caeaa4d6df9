/**
 * Issue 24, item 11: the shared contention budget is split in fair shares per client token.
 * One client with many sessions spends its own share and is refused (429) as a client, while
 * another client's contended attempts are still answered 409 LOCK_CONTENDED. Time is a manual
 * clock so no bucket refills behind the test's back. On the code before the split, the second
 * client's first attempt was 429: the first client had spent the shared budget for everyone.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { systemClock, type Clock } from '../../lock/core/clock.js';
import { httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';

class ManualClock implements Clock {
  private current = Date.now();
  now() {
    return this.current;
  }
  sleep(ms: number, signal?: AbortSignal) {
    return systemClock.sleep(ms, signal);
  }
}

/** No heartbeats here: sessions outlive the test on any machine (the holder lapsing would free the key). */
const LONG = 300_000;
const batchToken = 'batch-client-token-with-enough-entropy-0123456789';
const webToken = 'web-client-token-with-enough-entropy-abcdefghijk';

describe('fair shares of the shared contention budget per client token', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({
      store: 'embedded',
      clock: new ManualClock(),
      tokens: [
        { name: 'batch', token: batchToken, role: 'client' },
        { name: 'web', token: webToken, role: 'client' },
      ],
      env: {
        HOLDFAST_CONTENTION_PER_SESSION: '1000',
        HOLDFAST_CONTENTION_PER_SESSION_BURST: '1000',
        HOLDFAST_CONTENTION_SHARED: '1',
        HOLDFAST_CONTENTION_SHARED_BURST: '40',
      },
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('a client with 20 sessions spends its share; another client is still answered LOCK_CONTENDED', async () => {
    const batch = httpClient(server.url, { clientToken: batchToken });
    const web = httpClient(server.url, { clientToken: webToken });
    const holder = (await web.openSession({ owner: 'holder', ttlMillis: LONG })).body.sessionId;
    expect((await web.acquire('hot', { sessionId: holder, ttlMillis: 600_000 })).status).toBe(200);

    // The web client has contended once, so two clients share the budget: 20 attempts each.
    const webWorker = (await web.openSession({ owner: 'web-worker', ttlMillis: LONG })).body.sessionId;
    expect((await web.acquire('hot', { sessionId: webWorker })).body.error.code).toBe('LOCK_CONTENDED');

    const batchSessions: string[] = [];
    for (let i = 0; i < 20; i += 1) batchSessions.push((await batch.openSession({ owner: `batch-${i}`, ttlMillis: LONG })).body.sessionId);
    const answers: number[] = [];
    for (let round = 0; round < 3; round += 1) {
      for (const sessionId of batchSessions) answers.push((await batch.acquire('hot', { sessionId })).status);
    }
    const contended = answers.filter((status) => status === 409).length;
    const exceeded = answers.filter((status) => status === 429).length;
    expect(contended).toBe(20); // its share of 40 between two clients
    expect(exceeded).toBe(40);
    const refusal = await batch.acquire('hot', { sessionId: batchSessions[0]! });
    expect(refusal.status).toBe(429);
    expect(refusal.body.error.message).toMatch(/this client's fair share/);

    // The other client, with one session, still has what it is owed.
    for (let i = 0; i < 10; i += 1) {
      expect((await web.acquire('hot', { sessionId: webWorker })).body.error.code).toBe('LOCK_CONTENDED');
    }
  });
});
