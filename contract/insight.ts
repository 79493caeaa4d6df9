/**
 * The wire records of the insight routes (contract C3: A7 contention, the
 * per-key history, A7w waits) as TypeBox schemas with their types derived, so
 * the server's response schemas, core's insight and the console read one
 * definition. Field meanings are pinned in docs/contracts/C3-http.md.
 */
import { Type, type Static } from 'typebox';
import { HOLD_OUTCOMES } from './metric-table.js';
import { MULTI_HOLDER_KINDS } from './wire-rules.js';
import { FencingTokenSchema, SessionIdSchema, StringEnum, type AuditEntry } from './records.js';

const strictObject = <P extends Parameters<typeof Type.Object>[0]>(properties: P, description?: string) =>
  Type.Object(properties, { additionalProperties: false, ...(description ? { description } : {}) });

export const ContendedKeySchema = strictObject({
  key: Type.String(),
  contended: Type.Integer({ minimum: 0, description: 'contended attempts in the window (an upper bound past the counter capacity)' }),
  waiters: Type.Integer({ minimum: 0 }),
  holderSessionId: Type.Optional(SessionIdSchema),
  holderOwner: Type.Optional(Type.String()),
});
export type ContendedKey = Static<typeof ContendedKeySchema>;

export const ContentionTopSchema = strictObject(
  {
    windowMillis: Type.Integer({ minimum: 0 }),
    items: Type.Array(ContendedKeySchema),
  },
  'A7: the most contended keys in the window, most contended first: merged across the live instances on the SQL stores, this instance’s own on etcd.',
);
export type ContentionTop = Static<typeof ContentionTopSchema>;

export const LOCK_HISTORY_KINDS = ['granted', ...HOLD_OUTCOMES] as const;
export type LockHistoryKind = (typeof LOCK_HISTORY_KINDS)[number];

export const LockHistoryEventSchema = strictObject({
  at: Type.Integer({ minimum: 0, description: "the store's instant where the record carries one, else the answering instance's clock" }),
  kind: StringEnum(LOCK_HISTORY_KINDS),
  key: Type.String(),
  sessionId: SessionIdSchema,
  owner: Type.Optional(Type.String()),
  fencingToken: FencingTokenSchema,
  heldMillis: Type.Optional(Type.Integer({ minimum: 0, description: 'grant to end (ended kinds)' })),
  actor: Type.Optional(Type.String({ description: 'the operator (token name) behind a revoke or a kill' })),
  reason: Type.Optional(Type.String()),
  cause: Type.Optional(Type.String({ description: 'expired: ttl; session_ended: session_ttl | session_closed | session_killed' })),
  auditId: Type.Optional(Type.String()),
});
export type LockHistoryEvent = Static<typeof LockHistoryEventSchema>;

/** A7h's answer; the route's schema refers to the LockHistoryEvent and AuditEntry components. */
export interface KeyHistory {
  key: string;
  items: LockHistoryEvent[];
  audit: AuditEntry[];
}

export const WaitEdgeSchema = strictObject({
  waiterSessionId: SessionIdSchema,
  key: Type.String(),
  holderSessionId: Type.Union([SessionIdSchema, Type.Null()], { description: "null until the waiter's first try saw the holder" }),
  waiterOwner: Type.Optional(Type.String({ description: "the waiting session's owner (L1 owner), when known" })),
  holderOwner: Type.Optional(Type.String({ description: "the holding session's owner, when known" })),
  holderKind: Type.Optional(
    StringEnum(
      MULTI_HOLDER_KINDS,
      'present when the key admits several holders: one edge to each of them. A cycle through such an edge need not be a deadlock (any one holder leaving frees the waiter), so `cycles` leaves these edges out',
    ),
  ),
});
export type WaitEdge = Static<typeof WaitEdgeSchema>;

export const BrokenDeadlockSchema = strictObject({
  at: Type.Integer({ description: 'epoch ms when the victim was answered' }),
  sessions: Type.Array(SessionIdSchema, { description: 'the sessions of the cycle' }),
  keys: Type.Array(Type.String(), { description: 'the keys of the cycle' }),
  victimSessionId: SessionIdSchema,
  key: Type.String({ description: 'the key the victim waited for when it was answered 409 DEADLOCK_DETECTED' }),
});
export type BrokenDeadlock = Static<typeof BrokenDeadlockSchema>;

export const WaitGraphSchema = strictObject(
  {
    scope: StringEnum(['instance', 'fleet'], "`fleet`: every instance's recorded waits (stores with fleet wait state); `instance`: this one's"),
    items: Type.Array(WaitEdgeSchema),
    cycles: Type.Array(Type.Array(SessionIdSchema), { description: 'the sessions of each wait-for cycle (deadlock)' }),
    broken: Type.Array(BrokenDeadlockSchema, {
      description: 'cycles broken lately by answering their youngest wait DEADLOCK_DETECTED, newest first (this instance, at most 20)',
    }),
  },
  'A7w: the wait-for graph (fleet-wide where the store keeps fleet wait state), and the deadlocks this instance broke lately.',
);
export type WaitGraph = Static<typeof WaitGraphSchema>;
