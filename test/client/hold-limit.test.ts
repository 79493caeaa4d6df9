/**
 * Issue 26 (SDK part): a renewal refused with 409 HOLD_LIMIT_REACHED — the grant is older than its
 * policy's maxHoldMillis — loses the handle at once with that reason, and is not retried. Against the
 * fake server (scripted answers, manual clock); the end-to-end run against a real server with a policy
 * is test/http/policy-hold-limit.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { HoldLimitReachedError, LockLostError } from '../../client/errors.js';
import { ERROR_TABLE } from '../../contract/error-table.js';
import { renewIntervalMillis } from '../../client/renewer.js';
import { error } from './support/fake-lock-server.js';
import { fakeWorld } from './support/fake-world.js';

/** A 3 s hold limit, as a policy would set it: renewals of a grant older than this are refused. */
const MAX_HOLD_MILLIS = 3_000;
const MESSAGE = 'lock "payouts/eu" is past policy "payouts" maxHoldMillis 3000: not renewed, it ends at its TTL';

describe('HOLD_LIMIT_REACHED on renew', () => {
  it('a lock renewed every second past a 3 s limit: lost with HoldLimitReachedError at the first refused renewal, nothing sent after', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    const ttl = 3_000; // renewed every second
    let grantedAt = 0;
    world.server.intercept = (call) =>
      call.route === 'L5' && call.at - grantedAt > MAX_HOLD_MILLIS ? error(409, 'HOLD_LIMIT_REACHED', MESSAGE) : undefined;
    let lostAt = 0;
    let reason: unknown;
    await world.run(
      session.withLock(
        'payouts/eu',
        async (handle) => {
          grantedAt = world.server.calls.find((c) => c.route === 'L4')!.at;
          handle.signal.addEventListener('abort', () => (lostAt = world.clock.now()));
          await world.clock.sleep(10 * ttl, handle.signal).catch(() => {});
          expect(handle.lost).toBe(true);
          reason = handle.signal.reason;
        },
        { ttlMillis: ttl },
      ),
    );

    expect(reason).toBeInstanceOf(HoldLimitReachedError);
    expect(reason).toBeInstanceOf(LockLostError); // code that handles any loss handles this one
    const lost = reason as HoldLimitReachedError;
    expect(lost.code).toBe('HOLD_LIMIT_REACHED');
    expect(lost.retryable).toBe(ERROR_TABLE.HOLD_LIMIT_REACHED.retryable);
    expect(lost.retryable).toBe(false);
    expect(lost.key).toBe('payouts/eu');
    expect(lost.serverMessage).toBe(MESSAGE);
    expect(lost.message).toContain('hold limit');

    const renewals = world.server.calls.filter((c) => c.route === 'L5');
    const refused = renewals.filter((c) => c.at - grantedAt > MAX_HOLD_MILLIS);
    // Renewed while under the limit, then exactly one refusal, and no renewal after it.
    expect(renewals.length - refused.length).toBeGreaterThanOrEqual(2);
    expect(refused).toHaveLength(1);
    expect(lostAt).toBeGreaterThanOrEqual(refused[0]!.at);
    // Lost within one renewal interval of passing the limit, long before the 30 s of sleeping ended.
    expect(lostAt - (grantedAt + MAX_HOLD_MILLIS)).toBeLessThanOrEqual(renewIntervalMillis(ttl) + 100);
    // withLock still released the grant afterwards (the server lets it run out its TTL otherwise).
    expect(world.server.count('L6')).toBe(1);
  });

  it('a LOCK_LOST renewal keeps its own reason (not a hold limit)', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    world.server.intercept = (call) => (call.route === 'L5' ? error(409, 'LOCK_LOST', 'gone') : undefined);
    let reason: unknown;
    await world.run(
      session.withLock(
        'k',
        async (handle) => {
          await world.clock.sleep(10_000, handle.signal).catch(() => {});
          reason = handle.signal.reason;
        },
        { ttlMillis: 3_000 },
      ),
    );
    expect(reason).toBeInstanceOf(LockLostError);
    expect(reason).not.toBeInstanceOf(HoldLimitReachedError);
    expect((reason as LockLostError).code).toBe('LOCK_LOST');
  });
});
