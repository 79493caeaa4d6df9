/**
 * JSON Schemas for request bodies and query strings (Ajv, no coercion,
 * unknown fields rejected). Bounds are contract C3's.
 */

const token = { type: 'string', minLength: 1, maxLength: 19 } as const;
const sessionId = { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' } as const;
/**
 * No control characters (Unicode Cc) and no lone UTF-16 surrogates (Cs: PostgreSQL would store
 * U+FFFD, and an audit reason would then no longer match its hash); with `min > 0`, at least one
 * visible character. Ajv compiles patterns with the `u` flag, where a surrogate pair is one code point.
 */
const ALLOWED = '[^\\p{Cc}\\p{Cs}]';
const VISIBLE = '[^\\p{Cc}\\p{Cs}\\s]';
const text = (max: number, min = 0) =>
  ({ type: 'string', minLength: min, maxLength: max, pattern: min > 0 ? `^${ALLOWED}*${VISIBLE}${ALLOWED}*$` : `^${ALLOWED}*$` }) as const;

const object = <P extends Record<string, unknown>>(properties: P, required: (keyof P & string)[] = []) =>
  ({ type: 'object', additionalProperties: false, properties, required }) as const;

export const openSessionBody = object({
  ttlMillis: { type: 'integer', minimum: 1000, maximum: 300000 },
  owner: text(128),
});

export const emptyBody = object({});

export const acquireBody = object(
  {
    sessionId,
    ttlMillis: { type: 'integer', minimum: 1000, maximum: 600000 },
    waitMillis: { type: 'integer', minimum: 0, maximum: 30000 },
  },
  ['sessionId'],
);

export const renewBody = object(
  {
    sessionId,
    fencingToken: token,
    ttlMillis: { type: 'integer', minimum: 1000, maximum: 600000 },
  },
  ['sessionId', 'fencingToken'],
);

export const releaseBody = object({ sessionId, fencingToken: token }, ['sessionId', 'fencingToken']);

export const revokeBody = object({ reason: text(500, 1), expectedFencingToken: token }, ['reason']);

export const killBody = object({ reason: text(500, 1) }, ['reason']);

const queryString = (max: number) => ({ type: 'string', maxLength: max }) as const;

export const listLocksQuery = object({
  prefix: text(512),
  limit: queryString(8),
  cursor: queryString(1024),
  /** `age`: oldest grant first (no cursor; one page of `limit`). */
  sort: { type: 'string', enum: ['key', 'age'] },
});
export const listQuery = object({ limit: queryString(8), cursor: queryString(1024) });
export const auditQuery = object({
  limit: queryString(8),
  cursor: queryString(1024),
  actor: text(128),
  action: { type: 'string', enum: ['lock.revoke', 'session.kill'] },
  target: text(2048),
});

// ---- operator insight (issue 14) ----
export const contentionQuery = object({ limit: queryString(8) });
export const historyQuery = object({ limit: queryString(8) });
export const noQuery = object({});
