/**
 * Input rules of contract C3 that JSON Schema cannot say alone: lock keys
 * (1–512 bytes of UTF-8, no control characters, percent-encoded in the path),
 * int64 fencing tokens as decimal strings, and query-string integers.
 */
import { ValidationFailedError } from '../errors.js';

const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const INT64_MAX = 9223372036854775807n;

export const MAX_KEY_BYTES = 512;

/** Validates a decoded lock key. */
export function checkKey(key: string): string {
  const bytes = Buffer.byteLength(key, 'utf8');
  if (bytes < 1 || bytes > MAX_KEY_BYTES) {
    throw new ValidationFailedError(`lock key must be 1–${MAX_KEY_BYTES} bytes of UTF-8 (got ${bytes})`);
  }
  if (CONTROL_CHARACTERS.test(key)) throw new ValidationFailedError('lock key must not contain control characters');
  if (LONE_SURROGATE.test(key)) throw new ValidationFailedError('lock key must be valid UTF-8');
  return key;
}

/**
 * Decodes the raw (still percent-encoded) path segment that holds a key. The
 * router's own decoding is bypassed so that `%2F` inside a key stays part of it.
 */
export function decodeKeySegment(raw: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    throw new ValidationFailedError('lock key is not valid percent-encoding of UTF-8');
  }
  return checkKey(decoded);
}

export function checkFencingToken(token: string, field = 'fencingToken'): string {
  if (!/^(0|[1-9][0-9]{0,18})$/.test(token) || BigInt(token) > INT64_MAX) {
    throw new ValidationFailedError(`${field} must be a decimal int64 string`);
  }
  return token;
}

export function parseLimit(raw: string | undefined, fallback = 100, max = 1000): number {
  if (raw === undefined) return fallback;
  if (!/^[0-9]{1,7}$/.test(raw)) throw new ValidationFailedError('limit must be a whole number');
  const limit = Number(raw);
  if (limit < 1 || limit > max) throw new ValidationFailedError(`limit must be between 1 and ${max}`);
  return limit;
}
