import { describe, expect, it } from 'vitest';
import { FencedOutError, ValidationError } from '../../client/errors.js';
import { compareFencingTokens, fenced } from '../../client/fenced.js';
import { error } from './support/fake-lock-server.js';
import { fakeWorld } from './support/fake-world.js';

describe('fenced() on the protected resource’s side', () => {
  it('accepts rising and equal tokens and rejects a lower one with FencedOutError', () => {
    const highest = new Map<string, string>();
    fenced(highest, 'acct', '9');
    fenced(highest, 'acct', '9'); // same holder writing again
    fenced(highest, 'acct', '10'); // numeric, not string order: "10" > "9"
    expect(highest.get('acct')).toBe('10');
    const stale = (() => {
      try {
        fenced(highest, 'acct', '9');
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(stale).toBeInstanceOf(FencedOutError);
    expect(stale).toMatchObject({ key: 'acct', fencingToken: '9', highestSeen: '10' });
    expect(highest.get('acct')).toBe('10');
    fenced(highest, 'other', '1'); // per key
  });

  it('compares int64 decimal strings beyond 2^53 exactly', () => {
    expect(compareFencingTokens('9007199254740993', '9007199254740992')).toBe(1);
    expect(compareFencingTokens('9223372036854775807', '9223372036854775807')).toBe(0);
    expect(compareFencingTokens('2', '10')).toBe(-1);
  });

  it('rejects a token that is not a decimal string', () => {
    for (const bad of ['', '-1', '1e3', '01', ' 1', 'abc']) {
      expect(() => fenced(new Map(), 'k', bad)).toThrow(ValidationError);
    }
  });
});

describe('the SDK never hands out a token below one it was already granted', () => {
  it('throws FencedOutError and does not retry when the server grants a lower token', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession());
    const first = (await world.run(session.acquire('k')))!;
    await world.run(session.release(first));
    // A server that lost its history (wiped store) grants token 0.
    world.server.intercept = (c) =>
      c.route === 'L4'
        ? {
            status: 200,
            body: { key: 'k', sessionId: session.sessionId, fencingToken: '0', ttlMillis: 30_000, grantedAt: 0, expiresAt: 0 },
          }
        : undefined;
    const before = world.server.count('L4');
    await expect(world.run(session.acquire('k'))).rejects.toBeInstanceOf(FencedOutError);
    expect(world.server.count('L4')).toBe(before + 1);
  });

  it('a 409 is never mistaken for a fence: contention still returns null', async () => {
    const world = fakeWorld();
    world.server.intercept = (c) => (c.route === 'L4' ? error(409, 'LOCK_CONTENDED', 'x', true) : undefined);
    const session = await world.run(world.client().openSession());
    expect(await world.run(session.acquire('k', { policy: { totalBudgetMillis: 100 } }))).toBeNull();
  });
});
