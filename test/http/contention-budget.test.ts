/**
 * Contention budgets (429 CONTENTION_EXCEEDED): per session and shared, an
 * attempt charged to both or neither. Time is a manual clock so no bucket
 * refills behind the test's back.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { systemClock, type Clock } from '../../lock/core/clock.js';
import { ContentionBudget } from '../../lock/core/contention-budget.js';
import { httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';

class ManualClock implements Clock {
  constructor(private current = Date.now()) {}
  now() {
    return this.current;
  }
  advance(ms: number) {
    this.current += ms;
  }
  sleep(ms: number, signal?: AbortSignal) {
    return systemClock.sleep(ms, signal);
  }
}

describe('ContentionBudget', () => {
  test('charges both budgets or neither, and refills at its rate', () => {
    const clock = new ManualClock(0);
    const budget = new ContentionBudget({ perSessionPerSecond: 1, perSessionBurst: 2, sharedPerSecond: 1, sharedBurst: 3 }, clock);
    expect(budget.charge('a')).toEqual({ ok: true });
    expect(budget.charge('a')).toEqual({ ok: true });
    expect(budget.charge('a')).toMatchObject({ ok: false, scope: 'session', retryAfterSeconds: 1 });
    expect(budget.charge('b')).toEqual({ ok: true }); // shared now spent
    expect(budget.charge('b')).toMatchObject({ ok: false, scope: 'shared' });
    expect(budget.remaining('b')).toBe(1); // the shared refusal cost b nothing
    clock.advance(1000);
    expect(budget.charge('b')).toEqual({ ok: true });
    expect(budget.remaining('b')).toBe(1); // refilled one, spent one
  });

  test('Retry-After is the whole seconds until a token returns', () => {
    const clock = new ManualClock(0);
    const budget = new ContentionBudget({ perSessionPerSecond: 1, perSessionBurst: 1, sharedPerSecond: 1000, sharedBurst: 1000 }, clock);
    budget.charge('a');
    expect(budget.check('a')).toMatchObject({ ok: false, retryAfterSeconds: 1 });
    clock.advance(400);
    expect(budget.check('a')).toMatchObject({ ok: false, retryAfterSeconds: 1 });
  });
});

describe('contention budget over HTTP', () => {
  let server: TestServer;
  const clock = new ManualClock();
  beforeAll(async () => {
    server = await startServer({
      store: 'embedded',
      clock,
      env: {
        HOLDFAST_CONTENTION_PER_SESSION: '1',
        HOLDFAST_CONTENTION_PER_SESSION_BURST: '2',
        HOLDFAST_CONTENTION_SHARED: '1',
        HOLDFAST_CONTENTION_SHARED_BURST: '3',
      },
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test("exceeding a session's budget is 429 with Retry-After; a shared-cap refusal charges the session nothing", async () => {
    const api = httpClient(server.url);
    const holder = (await api.openSession({})).body.sessionId;
    const a = (await api.openSession({})).body.sessionId;
    const b = (await api.openSession({})).body.sessionId;
    expect((await api.acquire('hot', { sessionId: holder })).status).toBe(200);

    expect((await api.acquire('hot', { sessionId: a })).body.error.code).toBe('LOCK_CONTENDED');
    expect((await api.acquire('hot', { sessionId: a })).body.error.code).toBe('LOCK_CONTENDED');
    const exceeded = await api.acquire('hot', { sessionId: a });
    expect(exceeded.status).toBe(429);
    expect(exceeded.body.error).toMatchObject({ code: 'CONTENTION_EXCEEDED', retryable: true });
    expect(exceeded.headers.get('retry-after')).toBe('1');

    // Shared budget: 3 − 2 (a) = 1 left. b spends it; b's next attempt is refused by the shared cap.
    expect((await api.acquire('hot', { sessionId: b })).body.error.code).toBe('LOCK_CONTENDED');
    const service = server.running.service;
    const bBefore = service.contentionBudgetRemaining(b);
    expect(bBefore).toBe(1);
    const shared = await api.acquire('hot', { sessionId: b });
    expect(shared.status).toBe(429);
    expect(shared.body.error.message).toMatch(/shared/);
    expect(shared.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
    expect(service.contentionBudgetRemaining(b)).toBe(bBefore);

    // The budget counts contended attempts only: a free key is still granted.
    expect((await api.acquire('free', { sessionId: b })).status).toBe(200);
    clock.advance(1000);
    expect((await api.acquire('hot', { sessionId: b })).body.error.code).toBe('LOCK_CONTENDED');
  });
});
