/**
 * Input rules of contract C3 that JSON Schema cannot say alone, applied to the
 * HTTP surface: lock keys (contract's key rule: NFC, 1–512 bytes of UTF-8, no
 * control, invisible or bidi-control characters; percent-encoded in the path),
 * int64 fencing tokens as decimal strings, and query-string integers. The rules
 * themselves are contract/wire-rules.ts's; this file turns a refusal into a 400.
 */
import { LONE_SURROGATE, PAGE_LIMIT, checkLockKey, isFencingToken } from '../../contract/wire-rules.js';
import { MAX_LOCK_VALUE_BYTES, type LockMode } from '../../contract/records.js';
import { ValidationFailedError } from '../errors.js';

/** A decoded lock key as the store holds it (NFC), or a 400 naming what is wrong with it. */
export function checkKey(key: string): string {
  const checked = checkLockKey(key);
  if (!checked.ok) throw new ValidationFailedError(checked.problem);
  return checked.key;
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
  if (!isFencingToken(token)) throw new ValidationFailedError(`${field} must be a decimal int64 string`);
  return token;
}

/**
 * A holder's value: the schema bounds its characters, this its UTF-8 bytes (C3). It must be UTF-8 every
 * store keeps as sent: a lone surrogate has no UTF-8 form (it would be stored as U+FFFD) and a NUL
 * fits no PostgreSQL text (etcd would keep it), so both are refused here, on every store alike.
 */
export function checkLockValue(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (LONE_SURROGATE.test(value)) throw new ValidationFailedError('value must be valid UTF-8 (it holds a lone UTF-16 surrogate)');
  if (value.includes('\u0000')) throw new ValidationFailedError('value must not contain NUL (U+0000)');
  if (Buffer.byteLength(value, 'utf8') > MAX_LOCK_VALUE_BYTES) {
    throw new ValidationFailedError(`value must be at most ${MAX_LOCK_VALUE_BYTES} bytes of UTF-8`);
  }
  return value;
}

/** L4's `mode` and `limit`: a shared grant counts as one holder, so it names no other limit. */
export function checkHolding(mode: LockMode | undefined, limit: number | undefined): { mode?: LockMode; limit?: number } {
  if (mode === 'shared' && limit !== undefined && limit > 1) {
    throw new ValidationFailedError('mode "shared" takes no limit above 1: shared grants coexist without a count (use limit with mode "exclusive" for a semaphore)');
  }
  return { ...(mode !== undefined ? { mode } : {}), ...(limit !== undefined ? { limit } : {}) };
}

/** A whole number of milliseconds from a query string, within `range` (absent: its default). */
export function parseMillis(raw: string | undefined, range: { min: number; max: number; default: number }, field: string): number {
  if (raw === undefined) return range.default;
  if (!/^[0-9]{1,7}$/.test(raw)) throw new ValidationFailedError(`${field} must be a whole number of milliseconds`);
  const millis = Number(raw);
  if (millis < range.min || millis > range.max) throw new ValidationFailedError(`${field} must be between ${range.min} and ${range.max}`);
  return millis;
}

export function parseLimit(raw: string | undefined, fallback: number = PAGE_LIMIT.default, max: number = PAGE_LIMIT.max): number {
  if (raw === undefined) return fallback;
  if (!/^[0-9]{1,7}$/.test(raw)) throw new ValidationFailedError('limit must be a whole number');
  const limit = Number(raw);
  if (limit < 1 || limit > max) throw new ValidationFailedError(`limit must be between 1 and ${max}`);
  return limit;
}

/** The routes whose path holds a key, by method: the key segment, then these last segments. */
const KEY_ROUTES: readonly { method: string; prefix: string; suffixes: readonly (string | null)[] }[] = [
  { method: 'POST', prefix: '/v1/locks/', suffixes: ['acquire', 'renew', 'release'] },
  { method: 'GET', prefix: '/v1/locks/', suffixes: ['watch', null] },
  { method: 'POST', prefix: '/v1/admin/locks/', suffixes: ['revoke'] },
  { method: 'GET', prefix: '/v1/admin/locks/', suffixes: ['history'] },
];

/**
 * The message of a 404 for a path no route matches. When the path is a key route whose key
 * segment holds an unencoded `/` (`POST /v1/locks/a/b/acquire`), it says so and shows the
 * percent-encoded path: a key is exactly one path segment.
 */
export function noRouteMessage(method: string, url: string): string {
  const path = url.split('?')[0]!;
  const base = `no route ${method} ${path}`;
  for (const route of KEY_ROUTES) {
    if (route.method !== method || !path.startsWith(route.prefix)) continue;
    const rest = path.slice(route.prefix.length);
    for (const suffix of route.suffixes) {
      const keyPart = suffix === null ? rest : rest.endsWith(`/${suffix}`) ? rest.slice(0, -suffix.length - 1) : undefined;
      if (keyPart === undefined || !keyPart.includes('/') || keyPart.split('/').some((segment) => segment === '')) continue;
      const encoded = keyPart.split('/').join('%2F');
      return (
        `${base}: a lock key is one path segment, so a "/" inside it must be percent-encoded as %2F ` +
        `(encodeURIComponent(key)): ${route.prefix}${encoded}${suffix === null ? '' : `/${suffix}`}`
      );
    }
  }
  return base;
}
