/**
 * Issue 24 item 9 in the SDK: keys go through contract's key rule
 * (contract/wire-rules.ts), the same one the server applies — normalised to
 * NFC, so "é" precomposed or decomposed is one key, one handle and one L4; a
 * key with an invisible or bidirectional-control character is a
 * ValidationError before anything is sent.
 */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../client/errors.js';
import { canonicalKeyOrder, validateKey } from '../../client/keys.js';
import { checkLockKey } from '../../contract/wire-rules.js';
import { fakeWorld } from './support/fake-world.js';

const NFC = 'caf\u00e9';
const NFD = 'cafe\u0301';

describe('the SDK key rule is contract’s', () => {
  it('validateKey answers the NFC form, the same as the server would hold', () => {
    expect(validateKey(NFD)).toBe(NFC);
    expect(validateKey(NFC)).toBe(NFC);
    expect(validateKey('orders/42')).toBe('orders/42');
    expect(checkLockKey(NFD)).toEqual({ ok: true, key: NFC });
    // Distinct as given, one key once validated.
    expect(canonicalKeyOrder([NFD, NFC].map(validateKey))).toEqual([NFC]);
  });

  it.each([
    ['a zero-width space', 'pay\u200bouts', 'U+200B'],
    ['a right-to-left override', 'invoice-\u202eFDP.exe', 'U+202E'],
    ['a word joiner', 'pay\u2060outs', 'U+2060'],
    ['a soft hyphen', 'pay\u00adouts', 'U+00AD'],
  ])('%s is a ValidationError naming it', (_name, key, codePoint) => {
    expect(() => validateKey(key)).toThrow(ValidationError);
    expect(() => validateKey(key)).toThrow(codePoint);
  });

  it('the byte limit counts the normalised key (512 bytes of UTF-8)', () => {
    // 256 × "é" is 512 bytes precomposed, 768 decomposed: accepted, because it is held precomposed.
    expect(validateKey(NFD.slice(3).repeat(256))).toBe('\u00e9'.repeat(256));
    expect(() => validateKey('\u00e9'.repeat(256) + 'x')).toThrow(/1–512 bytes of UTF-8 \(got 513\)/);
    expect(() => validateKey('')).toThrow(ValidationError);
  });

  it('acquire with either spelling is one handle and one L4; the handle carries the NFC key', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession());
    const first = await world.run(session.acquire(NFD));
    const second = await world.run(session.acquire(NFC));
    expect(second).toBe(first);
    expect(first!.key).toBe(NFC);
    expect(world.server.count('L4')).toBe(1);
    expect(world.server.holder(NFC)?.sessionId).toBe(session.sessionId);
    expect(world.server.holder(NFD)).toBeUndefined();
    await world.run(session.release(second!));
    await world.run(session.release(first!));
    expect(world.server.count('L6')).toBe(1);
    expect(world.server.holder(NFC)).toBeUndefined();
  });

  it('withLock with the decomposed spelling renews and releases the NFC lock', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession());
    const result = await world.run(
      session.withLock(NFD, async (handle) => {
        expect(handle.key).toBe(NFC);
        // Long enough for the renewer to renew (the default lock TTL is 30 s).
        await world.clock.sleep(45_000);
        expect(handle.lost).toBe(false);
        return 'done';
      }),
    );
    expect(result).toBe('done');
    expect(world.server.count('L5')).toBeGreaterThan(0);
    expect(world.server.holder(NFC)).toBeUndefined();
  });

  it('a refused key sends nothing', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession());
    await expect(session.acquire('a\u200bb')).rejects.toBeInstanceOf(ValidationError);
    await expect(session.acquireAll(['ok', '\u202eko'])).rejects.toBeInstanceOf(ValidationError);
    expect(world.server.count('L4')).toBe(0);
  });
});
