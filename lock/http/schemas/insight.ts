/** A7, A7h, A7w: operator insight (issue 14) — most contended keys, one key's history, the wait-for graph. */
import { Type } from 'typebox';
import { ContentionTopSchema, WaitGraphSchema } from '../../../contract/insight.js';
import { CONTENTION_TOP_LIMIT, HISTORY_LIMIT } from '../../../contract/wire-rules.js';
import { ref } from './components.js';
import { ADMIN_ERRORS, ADMIN_TOKEN, errorResponses, json, keyParams, limitQuery, strictObject } from './parts.js';

export const contentionQuery = strictObject({ limit: limitQuery(CONTENTION_TOP_LIMIT) });
export const historyQuery = strictObject({ limit: limitQuery(HISTORY_LIMIT) });
export const noQuery = strictObject({});

export const insightRouteSchemas = {
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
} as const;
