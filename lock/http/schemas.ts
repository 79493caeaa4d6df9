/**
 * Every route's schemas in TypeBox, the one source for three things: Fastify
 * validates requests with them (Ajv, no coercion, unknown fields rejected),
 * serialises answers with them (fast-json-stringify), and @fastify/swagger
 * turns them into the OpenAPI document (GET /openapi.json, docs/openapi.json).
 * Bounds are contract C3's. The wire records are contract/records.ts's; the
 * answers only this surface gives (A5's summary, whoami, …) are defined here.
 *
 * Each route lists every status it can answer with the error codes possible
 * there, so a client generated from the document knows them all (the HTTP
 * black-box suite fails on any answer its route does not document).
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import { Type, type Static, type TSchema } from 'typebox';
import {
  ACQUIRE_OUTCOMES,
  HOLD_OUTCOMES,
  CONTENTION_REASONS,
  FORCE_REVOKE_OUTCOMES,
  RELEASE_OUTCOMES,
  RENEW_OUTCOMES,
  SESSION_EXPIRY_CAUSES,
} from '../../contract/metric-table.js';
import { ERROR_TABLE, errorBodySchema, type ErrorCode } from '../../contract/errors.js';
import {
  AUDIT_ACTIONS,
  AuditEntrySchema,
  BackendNameSchema,
  FencingTokenSchema,
  LockGrantSchema,
  LockInfoSchema,
  LockOutcomeSchema,
  PageSchema,
  SESSION_ID_PATTERN,
  SessionIdSchema,
  SessionInfoSchema,
  StringEnum,
} from '../../contract/records.js';
import { ContentionTopSchema, LockHistoryEventSchema, WaitGraphSchema } from '../../contract/insight.js';

// ---- request parts ----

const token = Type.String({ minLength: 1, maxLength: 19, description: 'int64 as a decimal string' });
const sessionId = Type.String({ pattern: SESSION_ID_PATTERN });
/**
 * No control characters (Unicode Cc) and no lone UTF-16 surrogates (Cs: PostgreSQL would store
 * U+FFFD, and an audit reason would then no longer match its hash); with `min > 0`, at least one
 * visible character. Ajv compiles patterns with the `u` flag, where a surrogate pair is one code point.
 */
const ALLOWED = '[^\\p{Cc}\\p{Cs}]';
const VISIBLE = '[^\\p{Cc}\\p{Cs}\\s]';
const text = (max: number, min = 0) =>
  Type.String({ minLength: min, maxLength: max, pattern: min > 0 ? `^${ALLOWED}*${VISIBLE}${ALLOWED}*$` : `^${ALLOWED}*$` });

const strictObject = <P extends Parameters<typeof Type.Object>[0]>(properties: P, description?: string) =>
  Type.Object(properties, { additionalProperties: false, ...(description ? { description } : {}) });

export const openSessionBody = strictObject({
  ttlMillis: Type.Optional(Type.Integer({ minimum: 1000, maximum: 300000, description: 'default 15000' })),
  owner: Type.Optional(text(128)),
});

export const emptyBody = strictObject({});

export const acquireBody = strictObject({
  sessionId,
  ttlMillis: Type.Optional(Type.Integer({ minimum: 1000, maximum: 600000, description: 'default LOCK_DEFAULT_TTL_MS (30000)' })),
  waitMillis: Type.Optional(Type.Integer({ minimum: 0, maximum: 30000, description: 'wait on the server up to this long; default 0' })),
});

export const renewBody = strictObject({
  sessionId,
  fencingToken: token,
  ttlMillis: Type.Optional(Type.Integer({ minimum: 1000, maximum: 600000, description: "default: the grant's own TTL" })),
});

export const releaseBody = strictObject({ sessionId, fencingToken: token });

export const revokeBody = strictObject({ reason: text(500, 1), expectedFencingToken: Type.Optional(token) });

export const killBody = strictObject({ reason: text(500, 1) });

/** Query values stay strings (no coercion); `parseLimit` reads `limit`, the store checks `cursor`. */
const queryString = (max: number, description: string) => Type.Optional(Type.String({ maxLength: max, description }));
const limit = queryString(8, 'page size, 1–1000 (default 100)');
const cursor = queryString(1024, 'nextCursor of the previous page');

export const listLocksQuery = strictObject({
  prefix: Type.Optional(text(512)),
  limit,
  cursor,
  sort: Type.Optional(StringEnum(['key', 'age'], '`age`: the `limit` oldest grants, oldest first, in one page (no cursor)')),
});
export const listQuery = strictObject({ limit, cursor });
export const auditQuery = strictObject({
  limit,
  cursor,
  actor: Type.Optional(text(128)),
  action: Type.Optional(StringEnum(AUDIT_ACTIONS)),
  target: Type.Optional(text(2048)),
});

// ---- operator insight (issue 14) ----
export const contentionQuery = strictObject({ limit: queryString(8, '1–100 (default 10)') });
export const historyQuery = strictObject({ limit: queryString(8, '1–500 (default 100)') });
export const noQuery = strictObject({});

const keyParams = Type.Object({
  key: Type.String({
    description:
      'The lock key: 1–512 bytes of UTF-8 without control characters, percent-encoded (a `/` inside a key is `%2F`).',
  }),
});
const sessionParams = Type.Object({ sessionId });

// ---- shared components (#/components/schemas/…) ----

const SessionOpenedSchema = strictObject(
  {
    sessionId: SessionIdSchema,
    sessionToken: Type.String({ description: 'Bearer capability for L2–L6 of this session: shown once, 43 base64url characters.' }),
    owner: Type.String(),
    ttlMillis: Type.Integer({ minimum: 1 }),
    expiresAt: Type.Integer({ minimum: 0 }),
  },
  'L1: a new session and its one-time sessionToken.',
);

const rates = (names: readonly string[]) =>
  strictObject(Object.fromEntries(names.map((name) => [name, Type.Number({ minimum: 0, description: 'per second' })])));
const ratesWindow = strictObject({
  acquire: rates(ACQUIRE_OUTCOMES),
  renew: rates(RENEW_OUTCOMES),
  release: rates(RELEASE_OUTCOMES),
  contention: rates(CONTENTION_REASONS),
  sessionExpired: rates(SESSION_EXPIRY_CAUSES),
  forceRevoke: rates(FORCE_REVOKE_OUTCOMES),
});
const sloWindow = strictObject({
  requests: Type.Integer({ minimum: 0 }),
  bad: Type.Integer({ minimum: 0 }),
  availability: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], { description: 'null with no requests' }),
});
export const ADMIN_ROLES = ['viewer', 'operator'] as const;

const SummarySchema = strictObject(
  {
    backend: BackendNameSchema,
    at: Type.Integer({ minimum: 0 }),
    heldLocks: Type.Integer({ minimum: 0 }),
    activeSessions: Type.Integer({ minimum: 0 }),
    waiters: Type.Integer({ minimum: 0 }),
    deadlockCycles: Type.Integer({ minimum: 0 }),
    rates: strictObject({ '1m': ratesWindow, '5m': ratesWindow }),
    slo: strictObject({
      objective: Type.Number(),
      windows: strictObject({ '1m': sloWindow, '5m': sloWindow, sinceStart: sloWindow }),
    }),
  },
  'A5: counts from the store; rates and SLO S1 windows from what this server instance answered.',
);

/**
 * Named schemas: registered with `addSchema` (Fastify resolves `Name#` for validation and
 * serialisation) and emitted as components, so generated clients get these type names.
 */
export const COMPONENTS = {
  LockGrant: LockGrantSchema,
  LockInfo: LockInfoSchema,
  LockOutcome: LockOutcomeSchema,
  AuditEntry: AuditEntrySchema,
  SessionInfo: SessionInfoSchema,
  SessionOpened: SessionOpenedSchema,
  Summary: SummarySchema,
  LockHistoryEvent: LockHistoryEventSchema,
} as const satisfies Record<string, TSchema>;
type ComponentName = keyof typeof COMPONENTS;
export type Summary = Static<typeof SummarySchema>;

/** A `$ref` to a component that keeps the component's static type (for the type provider). */
const ref = <Name extends ComponentName>(name: Name) => Type.Unsafe<Static<(typeof COMPONENTS)[Name]>>({ $ref: `${name}#` });

/** Registers the components with the app (before any route refers to them). */
export function componentSchemas(): TSchema[] {
  return [...Object.entries(COMPONENTS), ...errorComponents].map(([name, schema]) => ({ $id: name, title: name, ...schema }));
}

// ---- answers ----

const ERROR_MEANING: Record<ErrorCode, string> = {
  VALIDATION_FAILED: 'malformed input (types, ranges, unknown fields, bad JSON, oversize body, bad key or cursor, wrong content type)',
  UNAUTHENTICATED: 'token missing or unknown',
  FORBIDDEN: 'the token’s role may not do this',
  SESSION_NOT_FOUND: 'unknown, expired, closed or killed session',
  NOT_FOUND: 'no such route or method',
  LOCK_CONTENDED: 'held by another session',
  LOCK_LOST: 'the token no longer holds the lock',
  DEADLOCK_DETECTED: 'this wait closed a wait-for cycle and was chosen to end it',
  CONTENTION_EXCEEDED: 'contention budget or wait cap spent; back off (Retry-After)',
  NOT_LEADER: 'the store cannot take writes, or the server is shutting down (Retry-After)',
  INTERNAL: 'a bug; logged as request_failed with the request id',
};

const retryAfter = {
  'retry-after': Type.Integer({ minimum: 1, description: 'seconds to wait before retrying' }),
};

/** Every route can answer these: malformed input, shutdown or an unreachable store, a bug. */
const ALWAYS: readonly ErrorCode[] = ['VALIDATION_FAILED', 'NOT_LEADER', 'INTERNAL'];

/**
 * The error bodies routes answer, one named schema per set of codes a status can carry
 * (`Error_LOCK_CONTENDED_DEADLOCK_DETECTED`): registered beside COMPONENTS, so the document
 * names each once and generated clients get one type per set.
 */
const errorComponents = new Map<string, TSchema>();

/** Error answers of a route, one response per status, each naming the codes possible there. */
function errorResponses(...codes: ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of [...ALWAYS, ...codes]) {
    const { status } = ERROR_TABLE[code];
    byStatus.set(status, [...new Set([...(byStatus.get(status) ?? []), code])]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, statusCodes]) => {
      const name = ['Error', ...statusCodes].join('_');
      if (!errorComponents.has(name)) errorComponents.set(name, errorBodySchema(statusCodes));
      const body = Type.Unsafe<Static<ReturnType<typeof errorBodySchema>>>({
        $ref: `${name}#`,
        description: statusCodes.map((code) => `${code}: ${ERROR_MEANING[code]}`).join('; '),
        ...(status === 429 || status === 503 ? { headers: retryAfter } : {}),
      });
      return [status, body];
    }),
  );
}

const json = <T extends TSchema>(schema: T, description: string) => ({ ...schema, description }) as T;

type Security = { [scheme: string]: string[] }[];
/** L1/L7: open unless the tokens file has `client` entries. */
const CLIENT_TOKEN: Security = [{}, { clientToken: [] }];
const SESSION_TOKEN: Security = [{ sessionToken: [] }];
const ADMIN_TOKEN: Security = [{ adminToken: [] }];
const OPEN: Security = [];

/** The admin routes' auth answers: 401 before anything else is looked at, 403 for too low a role. */
const ADMIN_ERRORS: ErrorCode[] = ['UNAUTHENTICATED', 'FORBIDDEN'];

/** The app as buildHttpServer makes it: handlers are type-checked against these schemas. */
export type HttpApp = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>;

export const routeSchemas = {
  openSession: {
    operationId: 'openSession',
    summary: 'L1 — open a session',
    tags: ['sessions'],
    security: CLIENT_TOKEN,
    body: openSessionBody,
    response: { 201: ref('SessionOpened'), ...errorResponses('UNAUTHENTICATED') },
  },
  heartbeat: {
    operationId: 'heartbeat',
    summary: 'L2 — keep a session alive',
    description: 'The body may be absent; when present it is the empty object.',
    tags: ['sessions'],
    security: SESSION_TOKEN,
    params: sessionParams,
    body: emptyBody,
    response: {
      200: json(strictObject({ sessionId: SessionIdSchema, expiresAt: Type.Integer({ minimum: 0 }) }), 'The session’s new expiry.'),
      ...errorResponses('UNAUTHENTICATED', 'SESSION_NOT_FOUND'),
    },
  },
  closeSession: {
    operationId: 'closeSession',
    summary: 'L3 — close a session, releasing every lock it holds',
    tags: ['sessions'],
    security: SESSION_TOKEN,
    params: sessionParams,
    // `type: null` tells swagger there is no content; typed `undefined` so the handler sends nothing.
    response: { 204: Type.Unsafe<undefined>({ type: 'null', description: 'Closed.' }), ...errorResponses('UNAUTHENTICATED', 'SESSION_NOT_FOUND') },
  },
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
      ...errorResponses('UNAUTHENTICATED', 'SESSION_NOT_FOUND', 'LOCK_CONTENDED', 'DEADLOCK_DETECTED', 'CONTENTION_EXCEEDED'),
    },
  },
  renew: {
    operationId: 'renew',
    summary: 'L5 — extend a live grant (same token, later expiresAt)',
    tags: ['locks'],
    security: SESSION_TOKEN,
    params: keyParams,
    body: renewBody,
    response: { 200: ref('LockGrant'), ...errorResponses('UNAUTHENTICATED', 'SESSION_NOT_FOUND', 'LOCK_LOST') },
  },
  release: {
    operationId: 'release',
    summary: 'L6 — release a lock (compare-and-delete on key and fencing token)',
    tags: ['locks'],
    security: SESSION_TOKEN,
    params: keyParams,
    body: releaseBody,
    response: {
      200: json(strictObject({ key: Type.String(), released: Type.Literal(true) }), 'Released.'),
      ...errorResponses('UNAUTHENTICATED', 'SESSION_NOT_FOUND', 'LOCK_LOST'),
    },
  },
  readLock: {
    operationId: 'readLock',
    summary: 'L7 — read a lock (held: false when free)',
    tags: ['locks'],
    security: CLIENT_TOKEN,
    params: keyParams,
    response: { 200: ref('LockInfo'), ...errorResponses('UNAUTHENTICATED') },
  },
  listLocks: {
    operationId: 'listLocks',
    summary: 'A1 — list held locks, by key',
    tags: ['admin'],
    security: ADMIN_TOKEN,
    querystring: listLocksQuery,
    response: { 200: json(PageSchema(ref('LockInfo')), 'A page of locks.'), ...errorResponses(...ADMIN_ERRORS) },
  },
  listSessions: {
    operationId: 'listSessions',
    summary: 'A2 — list live sessions, by id',
    tags: ['admin'],
    security: ADMIN_TOKEN,
    querystring: listQuery,
    response: { 200: json(PageSchema(ref('SessionInfo')), 'A page of sessions.'), ...errorResponses(...ADMIN_ERRORS) },
  },
  revoke: {
    operationId: 'forceRevoke',
    summary: 'A3 — force-revoke a lock (operator; audited)',
    tags: ['admin'],
    security: ADMIN_TOKEN,
    params: keyParams,
    body: revokeBody,
    response: { 200: ref('LockOutcome'), ...errorResponses(...ADMIN_ERRORS) },
  },
  audit: {
    operationId: 'listAudit',
    summary: 'A4 — the audit trail, newest first',
    tags: ['admin'],
    security: ADMIN_TOKEN,
    querystring: auditQuery,
    response: { 200: json(PageSchema(ref('AuditEntry')), 'A page of audit entries.'), ...errorResponses(...ADMIN_ERRORS) },
  },
  verifyAudit: {
    operationId: 'verifyAudit',
    summary: 'A4v — verify the audit hash chain against the recorded head',
    tags: ['admin'],
    security: ADMIN_TOKEN,
    response: {
      200: json(
        Type.Union([
          strictObject({ ok: Type.Literal(true), entries: Type.Integer({ minimum: 0 }), headHash: Type.String() }),
          strictObject({
            ok: Type.Literal(false),
            entries: Type.Integer({ minimum: 0 }),
            brokenAt: Type.String({ description: 'the first entry id that does not link or match (or is missing)' }),
            problem: Type.String(),
          }),
        ]),
        'The verdict.',
      ),
      ...errorResponses(...ADMIN_ERRORS),
    },
  },
  whoami: {
    operationId: 'whoami',
    summary: 'A4w — the presented admin token’s name and role',
    tags: ['admin'],
    security: ADMIN_TOKEN,
    response: {
      200: json(strictObject({ name: Type.String(), role: StringEnum(ADMIN_ROLES) }), 'The token’s identity.'),
      ...errorResponses(...ADMIN_ERRORS),
    },
  },
  summary: {
    operationId: 'summary',
    summary: 'A5 — the overview the console shows',
    tags: ['admin'],
    security: ADMIN_TOKEN,
    response: { 200: ref('Summary'), ...errorResponses(...ADMIN_ERRORS) },
  },
  killSession: {
    operationId: 'killSession',
    summary: 'A6 — kill a session, releasing its locks (operator; audited)',
    tags: ['admin'],
    security: ADMIN_TOKEN,
    params: sessionParams,
    body: killBody,
    response: {
      200: json(
        strictObject({
          sessionId: SessionIdSchema,
          outcome: StringEnum(['KILLED', 'NOT_FOUND']),
          releasedLocks: Type.Integer({ minimum: 0 }),
          auditId: Type.String(),
        }),
        'The outcome (NOT_FOUND when the session was not live); audited either way.',
      ),
      ...errorResponses(...ADMIN_ERRORS),
    },
  },
  contention: {
    operationId: 'topContended',
    summary: 'A7 — the most contended keys',
    tags: ['admin'],
    security: ADMIN_TOKEN,
    querystring: contentionQuery,
    response: { 200: ContentionTopSchema, ...errorResponses(...ADMIN_ERRORS) },
  },
  keyHistory: {
    operationId: 'keyHistory',
    summary: "A7h — one key's recent events (this instance) and its audit entries",
    tags: ['admin'],
    security: ADMIN_TOKEN,
    params: keyParams,
    querystring: historyQuery,
    response: {
      200: json(
        strictObject({ key: Type.String(), items: Type.Array(ref('LockHistoryEvent')), audit: Type.Array(ref('AuditEntry')) }),
        'Both lists newest first.',
      ),
      ...errorResponses(...ADMIN_ERRORS),
    },
  },
  waits: {
    operationId: 'waitGraph',
    summary: 'A7w — who waits for whom (this instance), with its cycles',
    tags: ['admin'],
    security: ADMIN_TOKEN,
    querystring: noQuery,
    response: { 200: WaitGraphSchema, ...errorResponses(...ADMIN_ERRORS) },
  },
  metrics: {
    operationId: 'metrics',
    summary: 'Prometheus metrics (OpenMetrics with exemplars when asked)',
    tags: ['operations'],
    security: OPEN,
    response: {
      200: {
        description: 'The exposition.',
        content: {
          'text/plain': { schema: Type.String() },
          'application/openmetrics-text': { schema: Type.String() },
        },
      },
      ...errorResponses(),
    },
  },
  healthz: {
    operationId: 'healthz',
    summary: 'Liveness: the process answers',
    tags: ['operations'],
    security: OPEN,
    response: { 200: json(strictObject({ status: Type.Literal('ok') }), 'Alive.'), ...errorResponses() },
  },
  readyz: {
    operationId: 'readyz',
    summary: 'Readiness: the store answers (503 NOT_LEADER otherwise)',
    tags: ['operations'],
    security: OPEN,
    response: { 200: json(strictObject({ status: Type.Literal('ready'), backend: BackendNameSchema }), 'Ready.'), ...errorResponses() },
  },
  openapi: {
    operationId: 'openapi',
    summary: 'This document (OpenAPI 3.1)',
    tags: ['operations'],
    security: OPEN,
    response: {
      200: {
        description: 'The OpenAPI document, the same as docs/openapi.json in the source tree.',
        content: { 'application/json': { schema: Type.Object({}, { additionalProperties: true }) } },
      },
      ...errorResponses(),
    },
  },
} as const;
