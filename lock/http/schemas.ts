/**
 * Every route's schemas in TypeBox, the one source for three things: Fastify
 * validates requests with them (Ajv, no coercion, unknown fields rejected),
 * serialises answers with them (fast-json-stringify), and @fastify/swagger
 * turns them into the OpenAPI document (GET /openapi.json, docs/openapi.json).
 * Bounds, patterns and the error table are contract's (contract/wire-rules.ts,
 * contract/error-table.ts); the wire records are contract/records.ts's; the
 * answers only this surface gives (A5's summary, whoami, …) are defined here.
 *
 * One file per route group under ./schemas/ (parts and components shared):
 * sessions (L1–L3), locks (L4–L7), admin (A1–A6), insight (A7), operations.
 * Each route lists every status it can answer with the error codes possible
 * there, so a client generated from the document knows them all (the HTTP
 * black-box suite fails on any answer its route does not document).
 */
import { sessionRouteSchemas } from './schemas/sessions.js';
import { lockRouteSchemas } from './schemas/locks.js';
import { adminRouteSchemas } from './schemas/admin.js';
import { insightRouteSchemas } from './schemas/insight.js';
import { operationsRouteSchemas } from './schemas/operations.js';
import { policyRouteSchemas } from './schemas/policies.js';
import { consoleRouteSchemas } from './schemas/console.js';

export type { HttpApp } from './schemas/parts.js';
export { COMPONENTS, componentSchemas, type Summary } from './schemas/components.js';
export { ADMIN_ROLES } from './schemas/admin.js';

export const routeSchemas = {
  ...sessionRouteSchemas,
  ...lockRouteSchemas,
  ...adminRouteSchemas,
  ...insightRouteSchemas,
  ...operationsRouteSchemas,
  ...policyRouteSchemas,
  ...consoleRouteSchemas,
} as const;
