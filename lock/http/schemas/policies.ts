/** A8 (v3, issue 26; an extension of the pinned surface): the lock policies in force. */
import { Type, type Static } from 'typebox';
import type { LockPolicy } from '../../../contract/policies.js';
import { ADMIN_ERRORS, ADMIN_TOKEN, errorResponses, json, strictObject } from './parts.js';
import { noQuery } from './insight.js';

const millis = (description: string) => Type.Optional(Type.Integer({ minimum: 1, description }));

export const LockPolicySchema = strictObject(
  {
    name: Type.String({ description: 'The `policy` label of its keys’ `lock_held` and `lock_oldest_held_seconds` series.' }),
    prefix: Type.String({ description: 'Keys starting with this are under the policy, unless a longer prefix of another policy matches.' }),
    maxHoldMillis: millis('A grant older than this is not renewed (409 HOLD_LIMIT_REACHED) and ends at its TTL.'),
    maxTtlMillis: millis('The largest `ttlMillis` an L4 or L5 may ask for (else 400 VALIDATION_FAILED).'),
    defaultTtlMillis: millis('The TTL of an L4 that names none.'),
    maxWaiters: millis('Waits on one key beyond this are answered 429 CONTENTION_EXCEEDED.'),
  },
  'One entry of HOLDFAST_POLICIES_FILE.',
);

/** The wire record is contract/policies.ts's LockPolicy, field for field. */
const same: <A, B>(proof: [A] extends [B] ? ([B] extends [A] ? true : false) : false) => void = () => {};
same<Static<typeof LockPolicySchema>, { -readonly [K in keyof LockPolicy]: LockPolicy[K] }>(true);

export const policyRouteSchemas = {
  listPolicies: {
    operationId: 'listPolicies',
    summary: 'A8 — the lock policies in force (v3 extension)',
    description:
      'The policies of HOLDFAST_POLICIES_FILE as this instance last read them (re-read on change), in file order. ' +
      'A key is under the policy with the longest prefix it starts with; keys under none have the policy "". ' +
      'Empty without a policies file.',
    tags: ['admin'],
    security: ADMIN_TOKEN,
    querystring: noQuery,
    response: {
      200: json(strictObject({ items: Type.Array(LockPolicySchema) }), 'The policies in force.'),
      ...errorResponses(...ADMIN_ERRORS),
    },
  },
} as const;
