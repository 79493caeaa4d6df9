/**
 * The named schemas of the document (#/components/schemas/…): the wire records
 * (contract/records.ts, contract/insight.ts) and A5's summary, which only this
 * surface answers. Registered with `addSchema` (Fastify resolves `Name#` for
 * validation and serialisation) and emitted as components, so generated clients
 * get these type names.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { LockHistoryEventSchema } from '../../../contract/insight.js';
import {
  ACQUIRE_OUTCOMES,
  CONTENTION_REASONS,
  FORCE_REVOKE_OUTCOMES,
  RELEASE_OUTCOMES,
  RENEW_OUTCOMES,
  SESSION_EXPIRY_CAUSES,
} from '../../../contract/metric-table.js';
import {
  AuditEntrySchema,
  BackendNameSchema,
  LockGrantSchema,
  LockInfoSchema,
  LockOutcomeSchema,
  SessionInfoSchema,
  SessionOpenedSchema,
} from '../../../contract/records.js';
import { errorComponents, strictObject } from './parts.js';

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
export type Summary = Static<typeof SummarySchema>;

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

/** A `$ref` to a component that keeps the component's static type (for the type provider). */
export const ref = <Name extends ComponentName>(name: Name) => Type.Unsafe<Static<(typeof COMPONENTS)[Name]>>({ $ref: `${name}#` });

/** Registers the components with the app (before any route refers to them): the records, then the error bodies. */
export function componentSchemas(): TSchema[] {
  return [...Object.entries(COMPONENTS), ...errorComponents].map(([name, schema]) => ({ $id: name, title: name, ...schema }));
}
