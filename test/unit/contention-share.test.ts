/**
 * The shared contention cap is fleet-wide: with N live instances each enforces 1/N of the
 * configured rate and burst (lock/core/contention-budget.ts), still all-or-nothing.
 */
import { describe, expect, it } from 'vitest';
import { ContentionBudget } from '../../lock/core/contention-budget.js';
import type { Clock } from '../../lock/core/clock.js';

function manualClock(): Clock & { advance(ms: number): void } {
  let now = 1_000_000;
  return { now: () => now, sleep: async () => {}, advance: (ms) => (now += ms) };
}

/** Contended attempts the shared cap lets through at once, each from a fresh session. */
function sharedBurst(budget: ContentionBudget, prefix: string): number {
  let n = 0;
  while (budget.charge(`${prefix}-${n}`).ok) n++;
  return n;
}

describe('shared contention cap divided by live instances', () => {
  const config = { perSessionPerSecond: 1000, perSessionBurst: 1000, sharedPerSecond: 400, sharedBurst: 800 };

  it('one instance has the whole burst; four instances have a quarter each, refilling at a quarter of the rate', () => {
    const clock = manualClock();
    const alone = new ContentionBudget(config, clock);
    expect(sharedBurst(alone, 'a')).toBe(800);

    const clock4 = manualClock();
    const quarter = new ContentionBudget(config, clock4);
    quarter.setInstanceCount(4);
    expect(sharedBurst(quarter, 'q')).toBe(200);
    const refused = quarter.charge('late');
    expect(refused).toMatchObject({ ok: false, scope: 'shared' });
    clock4.advance(1000); // 400/s shared by four: 100 more after one second
    expect(sharedBurst(quarter, 'r')).toBe(100);
  });

  it('an instance leaving gives the others their share back (scaled, not reset)', () => {
    const clock = manualClock();
    const budget = new ContentionBudget(config, clock);
    budget.setInstanceCount(2);
    expect(sharedBurst(budget, 'x')).toBe(400);
    budget.setInstanceCount(1);
    // Empty stays empty when the bucket grows: a shrinking fleet is no burst of free attempts.
    expect(budget.charge('y')).toMatchObject({ ok: false, scope: 'shared' });
    clock.advance(500);
    expect(sharedBurst(budget, 'z')).toBe(200);
  });

  it('a refusal by the shared cap costs the session nothing (all-or-nothing, as before)', () => {
    const clock = manualClock();
    const budget = new ContentionBudget({ ...config, perSessionBurst: 5, perSessionPerSecond: 1 }, clock);
    budget.setInstanceCount(800); // one shared attempt per instance
    expect(budget.charge('s').ok).toBe(true);
    expect(budget.charge('s')).toMatchObject({ ok: false, scope: 'shared' });
    expect(budget.remaining('s')).toBe(4);
  });
});

describe('fair shares of the shared budget per principal (issue 24, item 11)', () => {
  const config = { perSessionPerSecond: 1000, perSessionBurst: 1000, sharedPerSecond: 100, sharedBurst: 200 };

  /** Attempts a principal gets through from fresh sessions before its share refuses one. */
  function spend(budget: ContentionBudget, principal: string, sessions = 1000): number {
    let n = 0;
    while (n < sessions && budget.charge(`${principal}-session-${n}`, principal).ok) n++;
    return n;
  }

  it('one client with many sessions cannot spend what another client is owed', () => {
    const clock = manualClock();
    const budget = new ContentionBudget(config, clock);
    // Alone, a client has the whole shared budget, spread over as many sessions as it likes.
    expect(spend(budget, 'token:batch')).toBe(200);
    // A second client arrives: it still gets its share, and is told nothing about the first.
    expect(budget.charge('web-1', 'token:web')).toEqual({ ok: true });
    expect(spend(budget, 'token:web') + 1).toBe(100);
    // The greedy client is refused as a client (its share), not as everyone (the shared budget).
    expect(budget.charge('batch-more', 'token:batch')).toMatchObject({ ok: false, scope: 'client' });
    clock.advance(1000); // 100/s shared by two: 50 each
    expect(spend(budget, 'token:batch')).toBe(50);
    expect(spend(budget, 'token:web')).toBe(50);
  });

  it('a client that stops contending gives its share back once idle', () => {
    const clock = manualClock();
    const budget = new ContentionBudget(config, clock);
    budget.charge('a-1', 'token:a');
    budget.charge('b-1', 'token:b');
    expect(budget.contendingPrincipals).toBe(2);
    clock.advance(10_000);
    budget.charge('a-2', 'token:a'); // a keeps contending
    budget.prune();
    expect(budget.contendingPrincipals).toBe(1);
    clock.advance(2_000); // refilled at the whole rate again
    expect(spend(budget, 'token:a')).toBe(200);
  });
});
