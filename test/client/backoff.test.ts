import { describe, expect, it } from 'vitest';
import { Backoff } from '../../client/backoff.js';
import { ValidationError } from '../../client/errors.js';
import { AcquirePolicy } from '../../client/policy.js';
import { seededRandom, freshRandom } from '../../client/random.js';

describe('full-jitter backoff (criterion 1)', () => {
  const policy = AcquirePolicy.DEFAULT;

  it('draws 10,000 delays at attempt 5 spread over [0, cap]: min < 5 %, max > 95 %, mean within 10 % of cap/2', () => {
    const backoff = new Backoff(policy.baseBackoffMillis, policy.maxBackoffMillis, seededRandom(20240501));
    const cap = backoff.ceiling(5);
    expect(cap).toBe(Math.min(2_000, 50 * 2 ** 5)); // 1,600 ms
    const draws = Array.from({ length: 10_000 }, () => backoff.delay(5));
    const min = Math.min(...draws);
    const max = Math.max(...draws);
    const mean = draws.reduce((a, b) => a + b, 0) / draws.length;
    expect(draws.every((d) => Number.isInteger(d) && d >= 0 && d <= cap)).toBe(true);
    expect(min).toBeLessThan(0.05 * cap);
    expect(max).toBeGreaterThan(0.95 * cap);
    expect(Math.abs(mean - cap / 2)).toBeLessThan(0.1 * (cap / 2));
  });

  it('holds the same bounds with an OS-seeded per-client source', () => {
    const backoff = new Backoff(50, 2_000, freshRandom());
    const draws = Array.from({ length: 10_000 }, () => backoff.delay(5));
    const mean = draws.reduce((a, b) => a + b, 0) / draws.length;
    expect(Math.min(...draws)).toBeLessThan(80);
    expect(Math.max(...draws)).toBeGreaterThan(1_520);
    expect(Math.abs(mean - 800)).toBeLessThan(80);
  });

  it('gives an identical sequence twice for a fixed seed, and a different one for another seed', () => {
    const sequence = (seed: number): number[] => {
      const backoff = new Backoff(50, 2_000, seededRandom(seed));
      return Array.from({ length: 200 }, (_, i) => backoff.delay(i % 12));
    };
    expect(sequence(7)).toEqual(sequence(7));
    expect(sequence(7)).not.toEqual(sequence(8));
  });

  it('does not overflow at attempt 200 (or 2^31): the ceiling is the cap', () => {
    const backoff = new Backoff(50, 2_000, seededRandom(1));
    for (const attempt of [6, 7, 64, 200, 1_024, 2 ** 31]) {
      expect(backoff.ceiling(attempt)).toBe(2_000);
      const delay = backoff.delay(attempt);
      expect(Number.isFinite(delay)).toBe(true);
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThanOrEqual(2_000);
    }
  });

  it('doubles the window per attempt until the cap', () => {
    const backoff = new Backoff(50, 2_000, seededRandom(1));
    expect([0, 1, 2, 3, 4, 5, 6].map((a) => backoff.ceiling(a))).toEqual([50, 100, 200, 400, 800, 1_600, 2_000]);
  });

  it('rejects a negative or fractional attempt', () => {
    const backoff = new Backoff(50, 2_000, seededRandom(1));
    expect(() => backoff.delay(-1)).toThrow(ValidationError);
    expect(() => backoff.delay(1.5)).toThrow(ValidationError);
  });
});

describe('AcquirePolicy', () => {
  it('ships the documented defaults', () => {
    expect(AcquirePolicy.DEFAULT.toJSON()).toEqual({
      totalBudgetMillis: 10_000,
      baseBackoffMillis: 50,
      maxBackoffMillis: 2_000,
      maxAttempts: 12,
      waitMillis: 0,
    });
  });

  it('is immutable', () => {
    const policy = new AcquirePolicy({ maxAttempts: 3 });
    expect(Object.isFrozen(policy)).toBe(true);
    expect(() => {
      (policy as { maxAttempts: number }).maxAttempts = 99;
    }).toThrow(TypeError);
  });

  it('rejects at construction a waitMillis above 30,000 and any negative figure', () => {
    expect(() => new AcquirePolicy({ waitMillis: 30_001 })).toThrow(ValidationError);
    expect(new AcquirePolicy({ waitMillis: 30_000 }).waitMillis).toBe(30_000);
    for (const field of ['totalBudgetMillis', 'baseBackoffMillis', 'maxBackoffMillis', 'maxAttempts', 'waitMillis'] as const) {
      expect(() => new AcquirePolicy({ [field]: -1 })).toThrow(ValidationError);
    }
    expect(() => new AcquirePolicy({ maxAttempts: 0 })).toThrow(ValidationError);
    expect(() => new AcquirePolicy({ baseBackoffMillis: 100, maxBackoffMillis: 50 })).toThrow(ValidationError);
    expect(() => new AcquirePolicy({ totalBudgetMillis: Number.NaN })).toThrow(ValidationError);
  });

  it('with() validates the copy too', () => {
    expect(AcquirePolicy.DEFAULT.with({ maxAttempts: 3 }).maxAttempts).toBe(3);
    expect(() => AcquirePolicy.DEFAULT.with({ waitMillis: 40_000 })).toThrow(ValidationError);
  });
});
