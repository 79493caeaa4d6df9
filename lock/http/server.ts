/**
 * The HTTP surface (contract C3) on Fastify: this file makes the instance
 * (limits, timeouts, validation options) and registers the parts, each one job:
 * request lifecycle hooks (hooks.ts), access (auth.ts), bodies (body-parsers.ts),
 * the one error exit (error-exit.ts), and the routes (session-, lock-, admin-,
 * insight- and ops-routes.ts). Validation is Ajv with coercion off and unknown
 * fields rejected; each route's schemas (request, every answer) are schemas.ts's,
 * which also make the OpenAPI document (openapi.ts). Telemetry leaves through
 * contract/http-events.ts, so nothing here names exporter/.
 */
import { randomUUID } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify from 'fastify';
import { HTTP_TIMEOUT_DEFAULTS, type HttpTimeouts } from '../config.js';
import { ValidationFailedError } from '../errors.js';
import { registerAdminRoutes } from './admin-routes.js';
import { registerAuditRetentionRoutes } from './audit-retention-routes.js';
import { registerAuth } from './auth.js';
import { registerConsoleRoutes } from './console-routes.js';
import { BODY_LIMIT_BYTES, registerBodyParsers } from './body-parsers.js';
import type { HttpServerDeps } from './deps.js';
import { registerErrorExit, sendError } from './error-exit.js';
import { registerRequestHooks } from './hooks.js';
import { registerInsightRoutes } from './insight-routes.js';
import { registerLockRoutes } from './lock-routes.js';
import { registerOpenApi, serveOpenApi } from './openapi.js';
import { registerOpsRoutes } from './ops-routes.js';
import { registerPolicyRoutes } from './policy-routes.js';
import type { HttpApp } from './schemas.js';
import { registerSessionRoutes } from './session-routes.js';
import { refuseUnlistedQueries } from './strict-query.js';
import { clientErrorHandler } from './client-errors.js';

export type { HttpServerDeps } from './deps.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * How often node checks every connection against the request and header timeouts. Node's default
 * (30 s) let a trickled request live up to 30 s past its timeout (issue 24: 26.9 s and 86.9 s seen);
 * at 250 ms a connection is closed within a quarter second of its timeout. The check walks only the
 * connections with a request in progress, in C++: cheap at any connection count this server sees.
 */
const CONNECTIONS_CHECK_MILLIS = 250;

/** node:http's HTTP_SERVER_KEEP_ALIVE_TIMEOUT_BUFFER: an idle socket closes this long after keepAliveTimeout. */
const NODE_KEEP_ALIVE_BUFFER_MILLIS = 1000;

export function buildHttpServer(deps: HttpServerDeps): HttpApp {
  const { service, telemetry } = deps;
  const timeouts: HttpTimeouts = deps.timeouts ?? HTTP_TIMEOUT_DEFAULTS;
  const app = Fastify({
    logger: false,
    bodyLimit: BODY_LIMIT_BYTES,
    // The pinned surface checks types strictly: "15000" is not an integer.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false } },
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    return503OnClosing: false,
    // A client that trickles its request is cut off (408): headers and body within requestMillis of
    // the request's first byte, headers alone within headersMillis (a new connection that sends
    // nothing counts from its start). The handler's own time (a server-side wait of up to 30 s) is
    // not bounded by these: node stops the clock once the whole request has arrived.
    requestTimeout: timeouts.requestMillis,
    http: {
      requestTimeout: timeouts.requestMillis,
      headersTimeout: timeouts.headersMillis,
      connectionsCheckingInterval: CONNECTIONS_CHECK_MILLIS,
    },
    // A kept-alive connection with no request in flight closes idleMillis after its last answer.
    // Node waits 1 s beyond its keepAliveTimeout (and advertises the shorter `Keep-Alive: timeout=`,
    // so a client never reuses a connection as it closes): the setting is idleMillis less that second.
    keepAliveTimeout: timeouts.idleMillis - NODE_KEEP_ALIVE_BUFFER_MILLIS,
    // A 512-byte key percent-encodes to at most 1,536 characters.
    routerOptions: { maxParamLength: 2048 },
    clientErrorHandler: clientErrorHandler(service.backend),
    frameworkErrors: (error, request, reply) => {
      void sendError(reply, request, new ValidationFailedError(`malformed request: ${error.message}`), telemetry);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Before the routes: swagger learns them as they are declared. The routes are declared in the
  // order of the C3 table, which is the order of docs/openapi.json.
  registerOpenApi(app);
  registerRequestHooks(app, deps);
  registerAuth(app, deps.tokens);
  registerErrorExit(app, telemetry);
  registerBodyParsers(app);
  refuseUnlistedQueries(app);

  registerSessionRoutes(app, service);
  registerLockRoutes(app, deps);
  registerAdminRoutes(app, { service, activity: deps.activity, openerOf: deps.openerOf, prefixesOf: (name) => deps.tokens.prefixesOf(name) });
  registerAuditRetentionRoutes(app, service, deps.auditTrail);
  registerInsightRoutes(app, service);
  registerPolicyRoutes(app, deps.policies ?? (() => []));
  registerConsoleRoutes(app, service);
  registerOpsRoutes(app, deps);
  serveOpenApi(app);
  return app;
}
