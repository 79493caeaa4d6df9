/** L4–L7: acquire, renew, release and read a lock. */
import { Type } from 'typebox';
import { LOCK_MODES, LockReleasedSchema, MAX_LOCK_VALUE_BYTES, StringEnum } from '../../../contract/records.js';
import { LOCK_LIMIT, LOCK_TTL_MILLIS, WAIT_MILLIS, WATCH_MILLIS } from '../../../contract/wire-rules.js';
import { ref } from './components.js';
import { CLIENT_TOKEN, SESSION_TOKEN, errorResponses, json, keyParams, limitQuery, queryString, sessionId, strictObject, token } from './parts.js';

/** At most MAX_LOCK_VALUE_BYTES of UTF-8: the schema bounds characters, the route the bytes (validation.ts). */
const lockValue = (description: string) => Type.String({ maxLength: MAX_LOCK_VALUE_BYTES, description: `${description}; at most ${MAX_LOCK_VALUE_BYTES} bytes of UTF-8` });

const lockTtl = (description: string) =>
  Type.Optional(Type.Integer({ minimum: LOCK_TTL_MILLIS.min, maximum: LOCK_TTL_MILLIS.max, description }));

export const acquireBody = strictObject({
  sessionId,
  ttlMillis: lockTtl(`default: the key's policy's defaultTtlMillis, else LOCK_DEFAULT_TTL_MS (${LOCK_TTL_MILLIS.default}); at most its policy's maxTtlMillis`),
  waitMillis: Type.Optional(
    Type.Integer({
      minimum: WAIT_MILLIS.min,
      maximum: WAIT_MILLIS.max,
      description: `wait on the server up to this long; default ${WAIT_MILLIS.default}`,
    }),
  ),
  value: Type.Optional(lockValue("the holder's value, stored with a new grant (an existing grant keeps its own)")),
  mode: Type.Optional(
    StringEnum(
      LOCK_MODES,
      '`shared` grants coexist; `exclusive` (default) excludes every other grant. While an exclusive acquire waits on the key, new shared acquires wait too (writer preference)',
    ),
  ),
  limit: Type.Optional(
    Type.Integer({
      minimum: LOCK_LIMIT.min,
      maximum: LOCK_LIMIT.max,
      description: `holders the key admits at once (a semaphore when > 1; default ${LOCK_LIMIT.default}); every holder of a key names the same limit (409 LIMIT_MISMATCH); not with mode shared`,
    }),
  ),
});

export const renewBody = strictObject({
  sessionId,
  fencingToken: token,
  ttlMillis: lockTtl("default: the grant's own TTL"),
  value: Type.Optional(lockValue('a proclaim: replaces the grant\'s value (same token)')),
});

export const watchQuery = strictObject({
  after: queryString(19, 'the highest fencing token of the holder set last seen; absent or 0: answer at once'),
  waitMillis: limitQuery(WATCH_MILLIS, 'how long to park before answering the unchanged state, '),
  untilHeld: Type.Optional(
    StringEnum(['true', 'false'], 'extension: `true` with `after` absent or 0 parks while the key is free (answers once it is held, or at waitMillis)'),
  ),
});

export const releaseBody = strictObject({ sessionId, fencingToken: token });

export const lockRouteSchemas = {
  acquire: {
    operationId: 'acquire',
    summary: 'L4 — acquire a lock (optionally waiting on the server)',
    description: 'A session that already holds the key gets its existing grant back (same token, no TTL change).',
    tags: ['locks'],
    security: SESSION_TOKEN,
    params: keyParams,
    body: acquireBody,
    response: {
      200: ref('LockGrant'),
      ...errorResponses('UNAUTHENTICATED', 'FORBIDDEN', 'SESSION_NOT_FOUND', 'LOCK_CONTENDED', 'LIMIT_MISMATCH', 'DEADLOCK_DETECTED', 'CONTENTION_EXCEEDED'),
    },
  },
  renew: {
    operationId: 'renew',
    summary: 'L5 — extend a live grant (same token, later expiresAt)',
    tags: ['locks'],
    security: SESSION_TOKEN,
    params: keyParams,
    body: renewBody,
    response: { 200: ref('LockGrant'), ...errorResponses('UNAUTHENTICATED', 'SESSION_NOT_FOUND', 'LOCK_LOST', 'HOLD_LIMIT_REACHED') },
  },
  release: {
    operationId: 'release',
    summary: 'L6 — release a lock (compare-and-delete on key and fencing token)',
    tags: ['locks'],
    security: SESSION_TOKEN,
    params: keyParams,
    body: releaseBody,
    response: {
      200: json(LockReleasedSchema, 'Released.'),
      ...errorResponses('UNAUTHENTICATED', 'SESSION_NOT_FOUND', 'LOCK_LOST'),
    },
  },
  readLock: {
    operationId: 'readLock',
    summary: 'L7 — read a lock (held: false when free)',
    tags: ['locks'],
    security: CLIENT_TOKEN,
    params: keyParams,
    response: { 200: ref('LockInfo'), ...errorResponses('UNAUTHENTICATED', 'FORBIDDEN') },
  },
  watchLock: {
    operationId: 'watchLock',
    summary: 'L8 — watch a lock: answers when its holder set differs from the one whose highest token is `after`',
    description:
      'A long poll, fleet-wide: a change made through any instance wakes a watch parked on any other. Answers at once when the holder set already differs (or `after` is absent or 0), else at `waitMillis` with the unchanged state. A proclaim (a new value, same token) is not a change.',
    tags: ['locks'],
    security: CLIENT_TOKEN,
    params: keyParams,
    querystring: watchQuery,
    response: { 200: ref('LockInfo'), ...errorResponses('VALIDATION_FAILED', 'UNAUTHENTICATED', 'FORBIDDEN') },
  },
} as const;
