/**
 * Issue 26 in core: per-prefix policies (default and maximum TTL, maxWaiters, maxHoldMillis) and
 * scoped sessions, on the in-memory store with a clock the test moves. What the HTTP surface,
 * the policies file and the tokens file add on top is tested in test/http/.
 */
import { afterEach, describe, expect, test } from 'vitest';
import type { LockEvents } from '../../contract/lock-events.js';
import type { LockPolicy } from '../../contract/policies.js';
import type { Clock } from '../../lock/core/clock.js';
import { LockService } from '../../lock/core/lock-service.js';
import { hashSessionToken } from '../../lock/core/session-token.js';
import {
  ContentionExceededError,
  ForbiddenError,
  HoldLimitReachedError,
  SessionNotFoundError,
  UnauthenticatedError,
  ValidationFailedError,
} from '../../lock/errors.js';
import { MemoryLockStore } from '../../lock/store/memory/memory-store.js';
import { eventually } from '../support/http.js';

class SteppedClock implements Clock {
  current = 1_700_000_000_000;
  now(): number {
    return this.current;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, Math.min(ms, 5));
      signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        reject(signal.reason);
      }, { once: true });
    });
  }
}

const silentEvents = new Proxy({} as LockEvents, { get: () => () => undefined });
const ctx = { requestId: 'teams-test' };
const services: LockService[] = [];
afterEach(async () => {
  for (const service of services.splice(0)) await service.stop();
});

function core(options: { policies?: LockPolicy[]; scopes?: Record<string, string[] | undefined> } = {}) {
  const clock = new SteppedClock();
  const store = new MemoryLockStore({ now: () => clock.now() });
  let policies = options.policies ?? [];
  const service = new LockService(store, silentEvents, {
    clock,
    random: () => 0.5,
    defaultLockTtlMillis: 30_000,
    policies: () => policies,
    ...(options.scopes
      ? { scopeOfToken: (name: string) => (name in options.scopes! ? options.scopes![name] : []) }
      : {}),
  });
  services.push(service);
  const session = async (owner: string, openedBy?: string) => {
    const view = await service.openSession({ ttlMillis: 600_000, owner, ...(openedBy ? { openedBy } : {}) }, ctx);
    return { sessionId: view.sessionId, tokenHash: hashSessionToken(view.sessionToken) };
  };
  return { clock, store, service, session, setPolicies: (next: LockPolicy[]) => (policies = next) };
}

describe('per-prefix policies in core', () => {
  const teams: LockPolicy[] = [
    { name: 'payments', prefix: 'payments/', maxTtlMillis: 60_000, defaultTtlMillis: 10_000, maxHoldMillis: 3_000, maxWaiters: 2 },
    { name: 'payments-batch', prefix: 'payments/batch/', maxTtlMillis: 120_000 },
  ];

  test('an acquire naming no TTL gets its policy default, else the server default capped at the policy maximum', async () => {
    const { service, session } = core({ policies: teams });
    const a = await session('a');
    expect((await service.acquire({ key: 'payments/x', session: a, waitMillis: 0 }, ctx)).ttlMillis).toBe(10_000);
    expect((await service.acquire({ key: 'payments/batch/y', session: a, waitMillis: 0 }, ctx)).ttlMillis).toBe(30_000);
    expect((await service.acquire({ key: 'other', session: a, waitMillis: 0 }, ctx)).ttlMillis).toBe(30_000);
    const capped = core({ policies: [{ name: 'short', prefix: 's/', maxTtlMillis: 5_000 }] });
    const b = await capped.session('b');
    expect((await capped.service.acquire({ key: 's/1', session: b, waitMillis: 0 }, ctx)).ttlMillis).toBe(5_000);
  });

  test('a TTL above the policy maximum is refused 400 on acquire and renew, naming the policy; nothing is granted', async () => {
    const { service, session } = core({ policies: teams });
    const a = await session('a');
    const refused = await service.acquire({ key: 'payments/x', session: a, ttlMillis: 60_001, waitMillis: 0 }, ctx).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ValidationFailedError);
    expect((refused as Error).message).toContain('"payments"');
    expect((await service.readLock('payments/x')).fencingToken ?? null).toBeNull();
    // The longer prefix's policy decides: 120 s is fine under payments/batch/.
    expect((await service.acquire({ key: 'payments/batch/z', session: a, ttlMillis: 120_000, waitMillis: 0 }, ctx)).ttlMillis).toBe(120_000);
    const held = await service.acquire({ key: 'payments/x', session: a, waitMillis: 0 }, ctx);
    await expect(service.renew({ key: 'payments/x', session: a, fencingToken: held.fencingToken, ttlMillis: 90_000 }, ctx)).rejects.toBeInstanceOf(
      ValidationFailedError,
    );
  });

  test('maxHoldMillis: renewals succeed until the grant is that old, then HOLD_LIMIT_REACHED and the grant ends at its TTL', async () => {
    const { clock, service, session } = core({ policies: teams });
    const a = await session('a');
    const held = await service.acquire({ key: 'payments/hold', session: a, ttlMillis: 2_000, waitMillis: 0 }, ctx);
    const renew = () => service.renew({ key: 'payments/hold', session: a, fencingToken: held.fencingToken }, ctx);
    clock.current += 1_000;
    const first = await renew();
    clock.current += 1_000;
    await renew();
    clock.current += 1_000; // 3 s since the grant
    const refused = await renew().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(HoldLimitReachedError);
    expect((refused as HoldLimitReachedError).code).toBe('HOLD_LIMIT_REACHED');
    // Still held until the TTL of its last renewal, then free.
    expect((await service.readLock('payments/hold')).fencingToken).toBe(held.fencingToken);
    clock.current = first.expiresAt + 1_000 + 1; // past the second renewal's expiry
    expect((await service.readLock('payments/hold')).fencingToken ?? null).toBeNull();
    // Under the longer prefix's policy (no hold limit) renewals go on and on.
    const free = await service.acquire({ key: 'payments/batch/long', session: a, ttlMillis: 2_000, waitMillis: 0 }, ctx);
    for (let second = 0; second < 10; second += 1) {
      clock.current += 1_000;
      expect((await service.renew({ key: 'payments/batch/long', session: a, fencingToken: free.fencingToken }, ctx)).fencingToken).toBe(free.fencingToken);
    }
  });

  test('maxWaiters: the waits beyond the cap on one key are answered 429; other keys are not affected', async () => {
    const { service, session } = core({ policies: teams });
    const holder = await session('holder');
    await service.acquire({ key: 'payments/hot', session: holder, ttlMillis: 60_000, waitMillis: 0 }, ctx);
    const waiters = [await session('w1'), await session('w2'), await session('w3')];
    const parked = waiters.slice(0, 2).map((w) => service.acquire({ key: 'payments/hot', session: w, waitMillis: 60_000 }, ctx).catch((e: unknown) => e));
    await eventually(async () => (await service.readLock('payments/hot')).waiterCount === 2, 10_000, 5);
    const third = await service.acquire({ key: 'payments/hot', session: waiters[2]!, waitMillis: 60_000 }, ctx).catch((e: unknown) => e);
    expect(third).toBeInstanceOf(ContentionExceededError);
    expect((third as Error).message).toContain('maxWaiters 2');
    expect((await service.readLock('payments/hot')).waiterCount).toBe(2);
    for (const w of waiters.slice(0, 2)) await service.closeSession(w, ctx);
    await Promise.all(parked);
  });
});

describe('scoped sessions in core', () => {
  const scopes = { team: ['team/'], unscoped: undefined };

  test('a session opened by a scoped token acquires only under its prefixes; outside is 403 and nothing is taken', async () => {
    const { service, session } = core({ scopes });
    const a = await session('a', 'team');
    expect((await service.acquire({ key: 'team/x', session: a, waitMillis: 0 }, ctx)).key).toBe('team/x');
    const refused = await service.acquire({ key: 'payments/x', session: a, waitMillis: 0 }, ctx).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ForbiddenError);
    expect((refused as Error).message).toContain('"team/"');
    expect((await service.readLock('payments/x')).fencingToken ?? null).toBeNull();
    expect(service.contentionBudgetRemaining(a.sessionId)).toBe(service.contentionBudgetRemaining('never-seen'));
    const open = await session('b', 'unscoped');
    expect((await service.acquire({ key: 'payments/x', session: open, waitMillis: 0 }, ctx)).key).toBe('payments/x');
    const anonymous = await session('c');
    expect((await service.acquire({ key: 'anything', session: anonymous, waitMillis: 0 }, ctx)).key).toBe('anything');
  });

  test('a wrong or unknown credential is refused as such, not 403: the scope is told only to the session itself', async () => {
    const { service, session } = core({ scopes });
    const a = await session('a', 'team');
    await expect(service.acquire({ key: 'payments/x', session: { ...a, tokenHash: hashSessionToken('not-it') }, waitMillis: 0 }, ctx)).rejects.toBeInstanceOf(
      UnauthenticatedError,
    );
    await expect(service.acquire({ key: 'payments/x', session: { sessionId: 's_unknown', tokenHash: a.tokenHash }, waitMillis: 0 }, ctx)).rejects.toBeInstanceOf(
      SessionNotFoundError,
    );
  });

  test('a session of a token no longer in the file reaches nothing', async () => {
    const { service, session } = core({ scopes });
    const gone = await session('g', 'removed-token');
    await expect(service.acquire({ key: 'team/x', session: gone, waitMillis: 0 }, ctx)).rejects.toBeInstanceOf(ForbiddenError);
  });
});
