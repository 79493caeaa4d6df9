/**
 * The wire records of contract C3, as TypeBox schemas with their TypeScript
 * types derived from them: the server's response schemas (validation, fast
 * serialisation and docs/openapi.json) and the types core and the console use
 * are one source. Every field name and meaning is pinned in
 * docs/contracts/C3-http.md; change both together. TypeBox is this leaf's only
 * import; the console imports these types only (no runtime code).
 */
import { Type, type Static, type TSchema } from 'typebox';
import { BACKENDS, FENCING_TOKEN_PATTERN, MAX_LOCK_VALUE_BYTES, SESSION_ID_PATTERN, compareFencingTokens } from './wire-rules.js';

// The patterns and limits are wire-rules.ts's (no schema library there, so the SDK bundles it alone).
export { BACKENDS, FENCING_TOKEN_PATTERN, MAX_LOCK_VALUE_BYTES, SESSION_ID_PATTERN, type BackendName } from './wire-rules.js';

/**
 * The records the SDK hands its callers are written out as interfaces too, so its bundled
 * declarations need no schema library; `same` below fails to compile when one drifts from its schema.
 */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const same = <A, B>(proof: Same<A, B>) => proof;

/** A string enum as `{type: "string", enum}` (what code generators map to an enum type). */
export const StringEnum = <const Values extends readonly string[]>(values: Values, description?: string) =>
  Type.Unsafe<Values[number]>({ type: 'string', enum: [...values], ...(description ? { description } : {}) });

const epochMillis = (description: string) => Type.Integer({ minimum: 0, description });

export const FencingTokenSchema = Type.String({
  pattern: FENCING_TOKEN_PATTERN,
  description: 'int64 as a decimal string (proto3 JSON convention); compare numerically',
});
/** int64 fencing token as a decimal string (proto3 JSON convention); compare numerically. */
export type FencingToken = string;

export const SessionIdSchema = Type.String({ pattern: SESSION_ID_PATTERN });

export const BackendNameSchema = StringEnum(BACKENDS);

/** How a key is held (v3): `exclusive` (a mutex, or a semaphore when `limit` > 1) or `shared`. */
export const LOCK_MODES = ['exclusive', 'shared'] as const;
export type LockMode = (typeof LOCK_MODES)[number];
/** What every grant is until semaphores and shared mode land (issue 23, slice 2): one exclusive holder. */
export const MUTEX = { mode: 'exclusive', limit: 1 } as const satisfies { mode: LockMode; limit: number };

const LockValueSchema = Type.String({ maxLength: MAX_LOCK_VALUE_BYTES, description: "the holder's value, at most 4096 bytes of UTF-8" });

export const LockGrantSchema = Type.Object(
  {
    key: Type.String({ description: 'the lock key, decoded' }),
    sessionId: SessionIdSchema,
    fencingToken: FencingTokenSchema,
    ttlMillis: Type.Integer({ minimum: 1 }),
    grantedAt: epochMillis('store clock'),
    expiresAt: epochMillis('store clock'),
    mode: StringEnum(LOCK_MODES),
    limit: Type.Integer({ minimum: 1, maximum: 1000, description: 'holders the key admits at once (1: a mutex)' }),
    value: Type.Optional(LockValueSchema),
  },
  { additionalProperties: false, description: 'The only grant shape (L4, L5).' },
);
/** The only grant shape (L4, L5). */
export interface LockGrant {
  key: string;
  sessionId: string;
  fencingToken: FencingToken;
  ttlMillis: number;
  /** Store clock, epoch ms. */
  grantedAt: number;
  /** Store clock, epoch ms. */
  expiresAt: number;
  mode: LockMode;
  /** Holders the key admits at once (1: a mutex). */
  limit: number;
  /** The holder's value, replaced by a proclaim (L5 with `value`); absent when it has none. */
  value?: string;
}
same<Static<typeof LockGrantSchema>, LockGrant>(true);

export const LockHolderSchema = Type.Object(
  {
    sessionId: SessionIdSchema,
    owner: Type.String(),
    fencingToken: FencingTokenSchema,
    grantedAt: epochMillis('store clock'),
    expiresAt: epochMillis('store clock'),
    value: Type.Optional(LockValueSchema),
  },
  { additionalProperties: false, description: 'One holder of a key (LockInfo.holders).' },
);
/** One holder of a key (LockInfo.holders). */
export interface LockHolder {
  sessionId: string;
  owner: string;
  fencingToken: FencingToken;
  grantedAt: number;
  expiresAt: number;
  value?: string;
}
same<Static<typeof LockHolderSchema>, LockHolder>(true);

export const LockInfoSchema = Type.Object(
  {
    key: Type.String(),
    held: Type.Boolean(),
    sessionId: Type.Optional(SessionIdSchema),
    owner: Type.Optional(Type.String()),
    fencingToken: Type.Optional(FencingTokenSchema),
    grantedAt: Type.Optional(epochMillis('store clock')),
    expiresAt: Type.Optional(epochMillis('store clock')),
    mode: Type.Optional(StringEnum(LOCK_MODES)),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    holders: Type.Array(LockHolderSchema, { description: 'every live holder, ordered by token (empty when free)' }),
    waiterCount: Type.Integer({ minimum: 0, description: 'Advisory: acquires waiting on the key, on every instance sharing the store.' }),
  },
  {
    additionalProperties: false,
    description: 'A lock as read (L7, A1, L8); the single-holder fields (present only when held) describe the holder with the lowest token.',
  },
);
/** A lock as read (L7, A1, L8). */
export interface LockInfo {
  key: string;
  held: boolean;
  sessionId?: string;
  owner?: string;
  fencingToken?: FencingToken;
  grantedAt?: number;
  expiresAt?: number;
  mode?: LockMode;
  limit?: number;
  /** Every live holder, ordered by token (empty when free). */
  holders: LockHolder[];
  /** Advisory: acquires waiting on the key, on every instance sharing the store. */
  waiterCount: number;
}
same<Static<typeof LockInfoSchema>, LockInfo>(true);

export const SessionOpenedSchema = Type.Object(
  {
    sessionId: SessionIdSchema,
    sessionToken: Type.String({ description: 'Bearer capability for L2–L6 of this session: shown once, 43 base64url characters.' }),
    owner: Type.String(),
    ttlMillis: Type.Integer({ minimum: 1 }),
    expiresAt: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false, description: 'L1: a new session and its one-time sessionToken.' },
);
/** L1's answer. */
export interface SessionOpened {
  sessionId: string;
  /**
   * The session's bearer capability (C3 "Session capability"): shown once, sent as
   * `Authorization: Bearer` on L2–L6. Never logged, never in an error message.
   */
  sessionToken: string;
  owner: string;
  ttlMillis: number;
  /** Server wall-clock epoch ms; informational only. */
  expiresAt: number;
}
same<Static<typeof SessionOpenedSchema>, SessionOpened>(true);

/** L2's answer: the session's new expiry. */
export const HeartbeatAckSchema = Type.Object(
  { sessionId: SessionIdSchema, expiresAt: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false },
);
export interface HeartbeatAck {
  sessionId: string;
  expiresAt: number;
}
same<Static<typeof HeartbeatAckSchema>, HeartbeatAck>(true);

/** L6's answer. */
export const LockReleasedSchema = Type.Object({ key: Type.String(), released: Type.Literal(true) }, { additionalProperties: false });
export interface LockReleased {
  key: string;
  released: true;
}
same<Static<typeof LockReleasedSchema>, LockReleased>(true);

export const REVOKE_OUTCOMES = ['REVOKED', 'NOT_HELD', 'TOKEN_MISMATCH'] as const;
export type RevokeOutcome = (typeof REVOKE_OUTCOMES)[number];

export const LockOutcomeSchema = Type.Object(
  {
    key: Type.String(),
    outcome: StringEnum(REVOKE_OUTCOMES),
    revokedFencingToken: Type.Optional(FencingTokenSchema),
    auditId: Type.String(),
  },
  { additionalProperties: false, description: "Force-revoke's result (A3) only; never on an acquire path." },
);
/** Force-revoke's result only; never on an acquire path. */
export type LockOutcome = Static<typeof LockOutcomeSchema>;

export const AUDIT_ACTIONS = ['lock.revoke', 'session.kill', 'audit.prune', 'tokens.advance'] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const AuditEntrySchema = Type.Object(
  {
    id: Type.String(),
    at: epochMillis('store clock'),
    actor: Type.String({ description: 'the name of the admin token' }),
    action: StringEnum(AUDIT_ACTIONS),
    target: Type.String({ description: 'The lock key for lock.revoke, the session id for session.kill, `audit` for audit.prune, `tokens` for tokens.advance.' }),
    fencingToken: Type.Optional(FencingTokenSchema),
    reason: Type.String(),
    outcome: Type.String({
      description: 'REVOKED / NOT_HELD / TOKEN_MISMATCH for revokes; KILLED / NOT_FOUND for kills; PRUNED / NOTHING_PRUNED for prunes; ADVANCED for tokens.advance (its fencingToken: every later token is above it).',
    }),
    requestId: Type.String(),
    prevHash: Type.String(),
    hash: Type.String(),
    keyId: Type.Optional(
      Type.String({ description: 'v3: the fingerprint of the audit key that sealed this entry; absent when the trail has no audit key.' }),
    ),
    actorScope: Type.Optional(
      Type.Array(Type.String(), {
        description: "v3: the key prefixes the actor's token was scoped to when it acted; absent for an unscoped token.",
      }),
    ),
  },
  { additionalProperties: false, description: 'An append-only, hash-chained audit entry (C2).' },
);
export type AuditEntry = Static<typeof AuditEntrySchema>;

export const SessionInfoSchema = Type.Object(
  {
    sessionId: SessionIdSchema,
    owner: Type.String(),
    ttlMillis: Type.Integer({ minimum: 1 }),
    createdAt: epochMillis('store clock'),
    lastHeartbeatAt: epochMillis('store clock'),
    expiresAt: epochMillis('store clock'),
    lockCount: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export type SessionInfo = Static<typeof SessionInfoSchema>;

/** A page of `item` (A1, A2, A4). */
export const PageSchema = <Item extends TSchema>(item: Item) =>
  Type.Object(
    {
      items: Type.Array(item),
      nextCursor: Type.Union([Type.String(), Type.Null()], {
        description: 'Opaque; pass it back unchanged for the next page. null on the last page.',
      }),
    },
    { additionalProperties: false },
  );
/** Generic, so written out; `PageSchema`'s static type is checked against it below. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}
same<Static<ReturnType<typeof PageSchema<typeof LockInfoSchema>>>, Page<LockInfo>>(true);

export const SESSION_END_CAUSES = ['ttl', 'closed', 'killed'] as const;
export type SessionEndCause = (typeof SESSION_END_CAUSES)[number];

/** Numeric comparison of two decimal fencing tokens (wire-rules.ts's). */
export const compareTokens: (a: FencingToken, b: FencingToken) => number = compareFencingTokens;
