/**
 * The C3 error table, once: every pinned error code with its HTTP status, its
 * retryability, whether its answer carries `Retry-After`, and what it means.
 * The server's error classes (lock/errors.ts), the route schemas and the
 * OpenAPI document (lock/http), and the SDK's errors (client/errors.ts,
 * client/wire.ts) all read it, so a code cannot mean one thing on the wire and
 * another in a client. No import: the SDK bundles this file.
 */

interface ErrorRow {
  readonly status: number;
  readonly retryable: boolean;
  /** The answer carries `Retry-After` (seconds). */
  readonly retryAfter: boolean;
  /** When it is answered (the OpenAPI document's description of the code). */
  readonly meaning: string;
}

export const ERROR_TABLE = {
  VALIDATION_FAILED: {
    status: 400,
    retryable: false,
    retryAfter: false,
    meaning: 'malformed input (types, ranges, unknown fields, bad JSON, oversize body, bad key or cursor, wrong content type)',
  },
  UNAUTHENTICATED: { status: 401, retryable: false, retryAfter: false, meaning: 'token missing or unknown' },
  FORBIDDEN: { status: 403, retryable: false, retryAfter: false, meaning: 'the token’s role may not do this' },
  SESSION_NOT_FOUND: { status: 404, retryable: false, retryAfter: false, meaning: 'unknown, expired, closed or killed session' },
  /** An unknown route or method; not in the brief's table (see C3 notes). */
  NOT_FOUND: { status: 404, retryable: false, retryAfter: false, meaning: 'no such route or method' },
  LOCK_CONTENDED: { status: 409, retryable: true, retryAfter: false, meaning: 'held by another session' },
  LOCK_LOST: { status: 409, retryable: false, retryAfter: false, meaning: 'the token no longer holds the lock' },
  HOLD_LIMIT_REACHED: {
    status: 409,
    retryable: false,
    retryAfter: false,
    meaning: 'the grant is older than its policy’s maxHoldMillis: it is not renewed and ends at its TTL',
  },
  LIMIT_MISMATCH: {
    status: 409,
    retryable: false,
    retryAfter: false,
    meaning: 'the key is held under another limit (every holder of a key names the same limit; shared counts as 1)',
  },
  DEADLOCK_DETECTED: {
    status: 409,
    retryable: false,
    retryAfter: false,
    meaning: 'this wait closed a wait-for cycle and was chosen to end it',
  },
  CONTENTION_EXCEEDED: {
    status: 429,
    retryable: true,
    retryAfter: true,
    meaning: 'contention budget or wait cap spent; back off (Retry-After)',
  },
  NOT_LEADER: {
    status: 503,
    retryable: true,
    retryAfter: true,
    meaning: 'the store cannot take writes, or the server is shutting down (Retry-After)',
  },
  INTERNAL: { status: 500, retryable: false, retryAfter: false, meaning: 'a bug; logged as request_failed with the request id' },
} as const satisfies Record<string, ErrorRow>;

export type ErrorCode = keyof typeof ERROR_TABLE;

export const ERROR_CODES = Object.keys(ERROR_TABLE) as ErrorCode[];

/**
 * Each code as a constant (`ERROR_CODE.LOCK_LOST` is `'LOCK_LOST'`): an error class names its
 * code through this, so a code that is not in the table does not compile.
 */
export const ERROR_CODE = Object.freeze(Object.fromEntries(ERROR_CODES.map((code) => [code, code]))) as {
  readonly [Code in ErrorCode]: Code;
};
