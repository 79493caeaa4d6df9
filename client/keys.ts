/**
 * Lock key rules (contract C3, one definition in contract/wire-rules.ts: NFC,
 * 1–512 bytes of UTF-8, no control, invisible or bidi-control characters) and
 * the one canonical order every multi-key acquire uses.
 */
import { ValidationError } from './errors.js';
import { checkLockKey } from './wire.js';

/**
 * The key as the server will hold it — normalised to Unicode NFC, so "é" precomposed and
 * decomposed are one key — or a ValidationError (nothing is sent).
 */
export function validateKey(key: unknown): string {
  if (typeof key !== 'string') throw new ValidationError(`lock key must be a string, got ${typeof key}`);
  const checked = checkLockKey(key);
  if (!checked.ok) throw new ValidationError(checked.problem);
  return checked.key;
}

/**
 * Distinct keys in canonical order: ascending by UTF-8 bytes. Byte order (not
 * JS string order) so clients in any language that sort the same bytes agree,
 * which is what makes {a, b} and {b, a} impossible to deadlock.
 */
export function canonicalKeyOrder(keys: Iterable<string>): string[] {
  const distinct = [...new Set(keys)];
  return distinct
    .map((key) => ({ key, bytes: Buffer.from(key, 'utf8') }))
    .sort((a, b) => Buffer.compare(a.bytes, b.bytes))
    .map(({ key }) => key);
}
