/** A1–A6: the viewer and operator routes (lists, force-revoke, audit, summary, kill), plus whoami, audit verify, export and prune. */
import { Type } from 'typebox';
import { AUDIT_ACTIONS, PageSchema, SessionIdSchema, StringEnum } from '../../../contract/records.js';
import { KEY_BYTES, REASON_CHARS } from '../../../contract/wire-rules.js';
import { ref } from './components.js';
import { ADMIN_ERRORS, ADMIN_TOKEN, cursor, errorResponses, json, keyParams, pageLimit, sessionParams, strictObject, text, token } from './parts.js';

export const ADMIN_ROLES = ['viewer', 'operator'] as const;

const reason = text(REASON_CHARS.max, REASON_CHARS.min);

export const revokeBody = strictObject({ reason, expectedFencingToken: Type.Optional(token) });

export const killBody = strictObject({ reason });

export const pruneAuditBody = strictObject({
  before: Type.Integer({
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    description: 'epoch milliseconds (store clock): the oldest run of entries whose `at` is before this is pruned',
  }),
  reason,
});

export const listLocksQuery = strictObject({
  prefix: Type.Optional(text(KEY_BYTES.max)),
  limit: pageLimit,
  cursor,
  sort: Type.Optional(StringEnum(['key', 'age'], '`age`: the `limit` oldest grants, oldest first, in one page (no cursor)')),
});
export const listQuery = strictObject({ limit: pageLimit, cursor });
export const auditQuery = strictObject({
  limit: pageLimit,
  cursor,
  actor: Type.Optional(text(128)),
  action: Type.Optional(StringEnum(AUDIT_ACTIONS)),
  target: Type.Optional(text(2048)),
});

export const adminRouteSchemas = {
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
  exportAudit: {
    operationId: 'exportAudit',
    summary: 'A4x — export the audit trail as JSON lines: checkpoint, every kept entry oldest first, the sealed head (v3 extension)',
    tags: ['admin'],
    security: ADMIN_TOKEN,
    response: {
      200: {
        description:
          'application/x-ndjson: `{"checkpoint":{id,hash}}`, then each AuditEntry (with prevHash, hash, keyId), then `{"head":AuditHead}`; an outsider re-verifies it from the checkpoint.',
        content: { 'application/x-ndjson': { schema: Type.String() } },
      },
      ...errorResponses(...ADMIN_ERRORS),
    },
  },
  pruneAudit: {
    operationId: 'pruneAudit',
    summary: 'A4p — prune the oldest audit entries behind a sealed checkpoint (operator; audited; v3 extension)',
    tags: ['admin'],
    security: ADMIN_TOKEN,
    body: pruneAuditBody,
    response: {
      200: json(
        strictObject({
          pruned: Type.Integer({ minimum: 0 }),
          checkpoint: strictObject({ id: Type.String(), hash: Type.String() }),
          auditId: Type.String(),
        }),
        'How many entries were deleted, the checkpoint now recorded (the last deleted entry), and the prune’s own audit entry.',
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
      200: json(
        strictObject({
          name: Type.String(),
          role: StringEnum(ADMIN_ROLES),
          prefixes: Type.Optional(
            Type.Array(Type.String(), { minItems: 1, description: 'a scoped token’s key prefixes (issue 26); absent for an unscoped token' }),
          ),
        }),
        'The token’s identity.',
      ),
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
} as const;
