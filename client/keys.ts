/**
 * Lock key rules (C3: 1–512 bytes of UTF-8, no control characters) and the
 * one canonical order every multi-key acquire uses.
 */
import { ValidationError } from './errors.js';

const MAX_KEY_BYTES = 512;
// C0 controls, DEL and C1 controls.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// A lone surrogate has no UTF-8 encoding; Buffer would silently turn it into U+FFFD.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function validateKey(key: unknown): string {
  if (typeof key !== 'string') throw new ValidationError(`lock key must be a string, got ${typeof key}`);
  const bytes = Buffer.byteLength(key, 'utf8');
  if (bytes < 1 || bytes > MAX_KEY_BYTES) {
    throw new ValidationError(`lock key must be 1–${MAX_KEY_BYTES} bytes of UTF-8, got ${bytes}`);
  }
  if (CONTROL.test(key)) throw new ValidationError('lock key must not contain control characters');
  if (LONE_SURROGATE.test(key)) throw new ValidationError('lock key must be valid Unicode (lone surrogate)');
  return key;
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
