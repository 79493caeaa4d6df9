/**
 * The OpenAPI 3.1 document of the HTTP surface, built by @fastify/swagger from
 * the route schemas (lock/http/schemas.ts) and served at GET /openapi.json.
 * `registerOpenApi` must run before the routes are added (swagger collects them
 * as they are declared). docs/openapi.json is the same document, committed
 * (`npm run gen`, guarded by a freshness test).
 */
import { fastifySwagger, type FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { componentSchemas, routeSchemas } from './schemas.js';

/** The version of the /v1 contract this document describes (not the package version). */
export const API_VERSION = '1.0.0';

const DOCUMENT: FastifyDynamicSwaggerOptions['openapi'] = {
  openapi: '3.1.0',
  info: {
    title: 'Holdfast lock server',
    version: API_VERSION,
    description:
      'A distributed lock service with fencing tokens: sessions (L1–L3), locks (L4–L7), admin (A1–A6) and operations routes. ' +
      'Every error answers `{"error": {"code", "message", "retryable"}}`; the codes each route can answer are listed under its statuses. ' +
      'Contract: docs/contracts/C3-http.md.',
    license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
  },
  servers: [{ url: 'http://127.0.0.1:7070', description: 'the default listen address (HOLDFAST_HOST, HOLDFAST_PORT)' }],
  tags: [
    { name: 'sessions', description: 'L1–L3: a session owns locks and lapses without heartbeats.' },
    { name: 'locks', description: 'L4–L7: acquire, renew, release and read locks; grants carry fencing tokens.' },
    { name: 'admin', description: 'A1–A6: viewer and operator routes (admin bearer token).' },
    { name: 'console', description: 'K1–K5 (v3 extension): the console’s one-time sign-in codes and sessions, shared by its replicas.' },
    { name: 'operations', description: 'Metrics, liveness, readiness and this document.' },
  ],
  components: {
    securitySchemes: {
      sessionToken: {
        type: 'http',
        scheme: 'bearer',
        description: 'The sessionToken L1 answered, for L2–L6 on that session.',
      },
      clientToken: {
        type: 'http',
        scheme: 'bearer',
        description: 'A token of any role from the tokens file; needed on L1 and L7 once the file has `client` entries.',
      },
      adminToken: {
        type: 'http',
        scheme: 'bearer',
        description: 'A viewer or operator token from the tokens file (A3 and A6 need operator).',
      },
    },
  },
};

export function registerOpenApi(app: FastifyInstance): void {
  for (const schema of componentSchemas()) app.addSchema(schema);
  // Set up at once rather than through app.register(): swagger learns routes from its onRoute
  // hook, and buildHttpServer declares them in this same tick, before a registered plugin
  // would load. (The plugin is `skip-override` anyway: it decorates this instance either way.)
  fastifySwagger(
    app,
    {
      openapi: DOCUMENT,
      // OpenAPI 3.1 is JSON Schema 2020-12: `const` stays `const`.
      convertConstToEnum: false,
      // Components keep the names they were registered under (the default is def-0, def-1, …).
      refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    },
    (error) => {
      if (error) throw error;
    },
  );
}

/** GET /openapi.json: the document of every route registered on `app`. */
export function serveOpenApi(app: FastifyInstance): void {
  let text: string | undefined;
  app.get('/openapi.json', { schema: routeSchemas.openapi }, async (_request, reply) => {
    // Serialised once; sent as text, so no response serialiser reshapes it.
    text ??= openApiText(app.swagger());
    return reply.type('application/json; charset=utf-8').send(text);
  });
}

/** The one serialisation of the document (served and committed alike). */
export function openApiText(document: unknown): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
