/** L1–L3: open a session, keep it alive, close it. */
import { Type } from 'typebox';
import { HeartbeatAckSchema } from '../../../contract/records.js';
import { OWNER_CHARS, SESSION_TTL_MILLIS } from '../../../contract/wire-rules.js';
import { ref } from './components.js';
import { CLIENT_TOKEN, SESSION_TOKEN, errorResponses, json, sessionParams, strictObject, text } from './parts.js';

export const openSessionBody = strictObject({
  ttlMillis: Type.Optional(
    Type.Integer({ minimum: SESSION_TTL_MILLIS.min, maximum: SESSION_TTL_MILLIS.max, description: `default ${SESSION_TTL_MILLIS.default}` }),
  ),
  owner: Type.Optional(text(OWNER_CHARS.max)),
});

export const emptyBody = strictObject({});

export const sessionRouteSchemas = {
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
      200: json(HeartbeatAckSchema, 'The session’s new expiry.'),
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
} as const;
