/**
 * The HTTP surface (contract C3) on Fastify. Validation is Ajv with coercion
 * off and unknown fields rejected; every error leaves through one handler in
 * the pinned body. L4/L5/L6 outcomes are recorded here, once per answer. Each
 * route's schemas (request, every answer) are lock/http/schemas.ts's, which
 * also make the OpenAPI document (lock/http/openapi.ts).
 */
import { randomUUID } from 'node:crypto';
import { context, type SpanContext } from '@opentelemetry/api';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { AdminIdentity, AdminRole, AdminTokens } from '../admin-tokens.js';
import type { LockService } from '../core/lock-service.js';
import { sessionCredential } from '../core/session-token.js';
import {
  DrainingError,
  ForbiddenError,
  HoldfastError,
  InternalError,
  RouteNotFoundError,
  UnauthenticatedError,
  ValidationFailedError,
} from '../errors.js';
import type { EventLog } from '../../exporter/events.js';
import type { ServerMetrics } from '../../exporter/server-metrics.js';
import { isS1Bad, isS1Counted, type MeasuredOutcome, type MeasuredRoute } from '../../exporter/outcomes.js';
import { beginMeasuredRequest, type MeasuredRequest } from '../../exporter/request-telemetry.js';
import { callerSpanContext } from '../../exporter/trace-context.js';
import { registerOpenApi, serveOpenApi } from './openapi.js';
import { routeSchemas } from './schemas.js';
import { checkFencingToken, decodeKeySegment, parseLimit } from './validation.js';
import { buildSummary } from './summary.js';
import { registerInsightRoutes } from './insight-routes.js';

export interface HttpServerDeps {
  service: LockService;
  tokens: AdminTokens;
  metrics: ServerMetrics;
  events: EventLog;
  defaultLockTtlMillis: number;
  /**
   * Aborted when the server starts draining (its reason a DrainingError): /readyz and new L4s answer
   * 503 at once, waiting acquires end at once; other routes are served until the listener closes.
   */
  shutdownSignal: AbortSignal;
  /** Renders `/metrics` (the exporter owns the format). */
  renderMetrics: (accept: string | undefined) => Promise<{ contentType: string; body: string }>;
}

declare module 'fastify' {
  interface FastifyRequest {
    errorCode?: string;
    clientGone?: boolean;
    /** The admin token's identity (never a client token: those are 403 on admin routes). */
    admin?: AdminIdentity & { role: AdminRole };
    /** Span, metric and exemplar of an L4/L5/L6 request. */
    measured?: MeasuredRequest;
    /** The span this request's log events name (server span, else the caller's). */
    eventTrace?: SpanContext;
    /** Answered with a DrainingError: outcome `draining`. */
    draining?: boolean;
  }
  interface FastifyContextConfig {
    measured?: MeasuredRoute;
    role?: AdminRole;
    /** L1/L7: a bearer token of any role once the tokens file has `client` entries. */
    clientGate?: boolean;
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const BODY_LIMIT_BYTES = 16 * 1024;

export function buildHttpServer(deps: HttpServerDeps): FastifyInstance {
  const { service, events } = deps;
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
    // A client that trickles its request (headers and body) is cut off; the handler's own
    // time (a server-side wait of up to 30 s) is not bounded by this.
    requestTimeout: 10_000,
    // A 512-byte key percent-encodes to at most 1,536 characters.
    routerOptions: { maxParamLength: 2048 },
    frameworkErrors: (error, request, reply) => {
      void sendError(reply, request, new ValidationFailedError(`malformed request: ${error.message}`));
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  registerOpenApi(app);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    reply.header('holdfast-backend', service.backend);
    // Started before validation so malformed L4s are timed and traced like any other answer.
    const measured = request.routeOptions.config?.measured;
    if (measured) {
      request.measured = beginMeasuredRequest(measured, request.headers, deps.metrics);
      request.eventTrace = request.measured.spanContext;
    } else {
      request.eventTrace = callerSpanContext(request.headers);
    }
    // Draining: no new acquires here (the caller retries on another instance); holders may still
    // renew and release, sessions still heartbeat, until the listener closes.
    if (deps.shutdownSignal.aborted && measured === 'acquire') throw deps.shutdownSignal.reason;
  });

  // Admin routes: bearer token, then role — before the body is parsed or validated, so an
  // unauthenticated caller learns nothing about the schema.
  app.addHook('onRequest', async (request) => {
    const { role, clientGate } = request.routeOptions.config;
    if (clientGate && deps.tokens.clientsRequired) {
      const presented = bearerOf(request);
      if (presented === undefined) throw new UnauthenticatedError('this server needs Authorization: Bearer <client token>');
      if (!deps.tokens.identify(presented)) throw new UnauthenticatedError('unknown client token');
      return;
    }
    if (!role) return;
    const presented = bearerOf(request);
    if (presented === undefined) throw new UnauthenticatedError('admin routes need Authorization: Bearer <token>');
    const identity = deps.tokens.identify(presented);
    if (!identity) throw new UnauthenticatedError('unknown admin token');
    if (identity.role === 'client') throw new ForbiddenError(`${identity.name} is a client token; admin routes need viewer or operator`);
    if (role === 'operator' && identity.role !== 'operator') {
      throw new ForbiddenError(`${identity.name} is a viewer; this action needs the operator role`);
    }
    request.admin = { name: identity.name, role: identity.role };
  });

  app.addHook('onResponse', async (request, reply) => {
    const { measured } = request;
    if (!measured) return;
    // A caller that left was never answered: S1 and the metric count answers only.
    if (request.clientGone) return measured.abandoned();
    const outcome = measured.answered({
      status: reply.statusCode,
      ...(request.errorCode !== undefined ? { code: request.errorCode } : {}),
      seconds: reply.elapsedTime / 1000,
      ...(request.draining ? { draining: true } : {}),
    });
    if (outcome) recordActivity(service, measured.route, outcome);
  });
  app.addHook('onRequestAbort', async (request) => {
    request.measured?.abandoned();
  });

  // While shutting down, every answer (including those of requests already in flight) closes its
  // connection: a kept-alive connection that turns idle after close() began would hold the exit.
  app.addHook('onSend', async (_request, reply, payload) => {
    if (deps.shutdownSignal.aborted) reply.header('connection', 'close');
    return payload;
  });

  app.setErrorHandler((error, request, reply) => sendError(reply, request, error));
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, request, new RouteNotFoundError(`no route ${request.method} ${request.url.split('?')[0]}`)),
  );

  // The server is JSON only; everything else is a 400, not a 415 outside the pinned table.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: BODY_LIMIT_BYTES }, (_req, body, done) => {
    if (body === '') return done(null, undefined);
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(new ValidationFailedError('body is not valid JSON'), undefined);
    }
  });
  app.addContentTypeParser('*', (_req, _payload, done) => done(new ValidationFailedError('body must be application/json'), undefined));

  const ctx = (request: FastifyRequest) => ({ requestId: request.id, ...(request.eventTrace ? { trace: request.eventTrace } : {}) });
  /** Runs a measured handler inside its server span, so store calls are its children. */
  const inSpan = <T>(request: FastifyRequest, work: () => Promise<T>): Promise<T> =>
    request.measured?.context ? context.with(request.measured.context, work) : work();
  const keyOf = (request: FastifyRequest) => {
    const raw = /^\/v1\/(?:admin\/)?locks\/([^/?#]+)/.exec(request.url)?.[1];
    if (raw === undefined) throw new ValidationFailedError('lock key missing from the path');
    return decodeKeySegment(raw);
  };
  const bodyOf = <T>(request: FastifyRequest) => (request.body ?? {}) as T;
  /** The session named by the route, with the sessionToken the caller presented (if any). */
  const credentialOf = (request: FastifyRequest, sessionId: string) => sessionCredential(sessionId, bearerOf(request));

  // ---- L1–L3 sessions ----
  app.post('/v1/sessions', { schema: routeSchemas.openSession, config: { clientGate: true } }, async (request, reply) => {
    const body = bodyOf<{ ttlMillis?: number; owner?: string }>(request);
    const session = await service.openSession({ ttlMillis: body.ttlMillis ?? 15000, owner: body.owner ?? '' }, ctx(request));
    return reply.code(201).send(session);
  });

  // C3 allows L2 without a body: an absent body is the empty object, anything else is validated.
  app.post(
    '/v1/sessions/:sessionId/heartbeat',
    {
      schema: routeSchemas.heartbeat,
      preValidation: async (request) => {
        if (request.body === undefined) request.body = {};
      },
    },
    async (request) => service.heartbeat(credentialOf(request, (request.params as { sessionId: string }).sessionId)),
  );

  app.delete('/v1/sessions/:sessionId', { schema: routeSchemas.closeSession }, async (request, reply) => {
    await service.closeSession(credentialOf(request, (request.params as { sessionId: string }).sessionId), ctx(request));
    return reply.code(204).send();
  });

  // ---- L4–L7 locks ----
  app.post('/v1/locks/:key/acquire', { schema: routeSchemas.acquire, config: { measured: 'acquire' } }, async (request, reply) => {
    const key = keyOf(request);
    const body = bodyOf<{ sessionId: string; ttlMillis?: number; waitMillis?: number }>(request);
    const acquire = (signal?: AbortSignal) =>
      // The server span continues the caller's trace when it sent one (the SDK's lock.acquire span).
      inSpan(request, () =>
        service.acquire(
          {
            key,
            session: credentialOf(request, body.sessionId),
            ttlMillis: body.ttlMillis ?? deps.defaultLockTtlMillis,
            waitMillis: body.waitMillis ?? 0,
          },
          ctx(request),
          signal,
        ),
      );
    // A try without a wait has nothing to abort: it costs no controller and no listeners (the hot
    // path); a caller leaving mid-try is still seen by the onRequestAbort hook.
    if (!body.waitMillis) {
      const grant = await acquire();
      request.measured?.fencingToken(grant.fencingToken);
      return grant;
    }
    const abort = new AbortController();
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished) {
        request.clientGone = true;
        abort.abort(new Error('client went away'));
      }
    });
    // Shutdown reaches this request through a listener removed when it ends: combining with the
    // process-lifetime signal (AbortSignal.any) would keep an entry per request alive on Node 20.
    const onShutdown = () => abort.abort(deps.shutdownSignal.reason);
    deps.shutdownSignal.addEventListener('abort', onShutdown, { once: true });
    try {
      const grant = await acquire(abort.signal);
      request.measured?.fencingToken(grant.fencingToken);
      return grant;
    } finally {
      deps.shutdownSignal.removeEventListener('abort', onShutdown);
    }
  });

  app.post('/v1/locks/:key/renew', { schema: routeSchemas.renew, config: { measured: 'renew' } }, async (request) => {
    const key = keyOf(request);
    const body = bodyOf<{ sessionId: string; fencingToken: string; ttlMillis?: number }>(request);
    const fencingToken = checkFencingToken(body.fencingToken);
    request.measured?.fencingToken(fencingToken);
    return inSpan(request, () =>
      service.renew(
        {
          key,
          session: credentialOf(request, body.sessionId),
          fencingToken,
          // Absent: the grant keeps its own TTL (never the default, which could shorten it).
          ...(body.ttlMillis !== undefined ? { ttlMillis: body.ttlMillis } : {}),
        },
        ctx(request),
      ),
    );
  });

  app.post('/v1/locks/:key/release', { schema: routeSchemas.release, config: { measured: 'release' } }, async (request) => {
    const key = keyOf(request);
    const body = bodyOf<{ sessionId: string; fencingToken: string }>(request);
    const fencingToken = checkFencingToken(body.fencingToken);
    request.measured?.fencingToken(fencingToken);
    return inSpan(request, () => service.release({ key, session: credentialOf(request, body.sessionId), fencingToken }, ctx(request)));
  });

  app.get('/v1/locks/:key', { schema: routeSchemas.readLock, config: { clientGate: true } }, async (request) => service.readLock(keyOf(request)));

  // ---- A1–A6 admin ----
  app.get('/v1/admin/locks', { schema: routeSchemas.listLocks, config: { role: 'viewer' } }, async (request) => {
    const q = request.query as { prefix?: string; limit?: string; cursor?: string; sort?: 'key' | 'age' };
    if (q.sort === 'age') {
      if (q.cursor) throw new ValidationFailedError('sort=age answers one page of the oldest grants; it takes no cursor');
      return { items: await service.oldestLocks(parseLimit(q.limit), q.prefix || undefined), nextCursor: null };
    }
    return service.listLocks({
      limit: parseLimit(q.limit),
      ...(q.prefix ? { prefix: q.prefix } : {}),
      ...(q.cursor ? { cursor: q.cursor } : {}),
    });
  });

  app.get('/v1/admin/sessions', { schema: routeSchemas.listSessions, config: { role: 'viewer' } }, async (request) => {
    const q = request.query as { limit?: string; cursor?: string };
    return service.listSessions({ limit: parseLimit(q.limit), ...(q.cursor ? { cursor: q.cursor } : {}) });
  });

  app.post('/v1/admin/locks/:key/revoke', { schema: routeSchemas.revoke, config: { role: 'operator' } }, async (request) => {
    const key = keyOf(request);
    const body = bodyOf<{ reason: string; expectedFencingToken?: string }>(request);
    return service.forceRevoke(
      {
        key,
        reason: body.reason,
        ...(body.expectedFencingToken !== undefined
          ? { expectedFencingToken: checkFencingToken(body.expectedFencingToken, 'expectedFencingToken') }
          : {}),
      },
      request.admin!.name,
      ctx(request),
    );
  });

  app.get('/v1/admin/audit', { schema: routeSchemas.audit, config: { role: 'viewer' } }, async (request) => {
    const q = request.query as { limit?: string; cursor?: string; actor?: string; action?: string; target?: string };
    return service.listAudit({
      limit: parseLimit(q.limit),
      ...(q.cursor ? { cursor: q.cursor } : {}),
      ...(q.actor ? { actor: q.actor } : {}),
      ...(q.action ? { action: q.action } : {}),
      ...(q.target ? { target: q.target } : {}),
    });
  });

  app.get('/v1/admin/audit/verify', { schema: routeSchemas.verifyAudit, config: { role: 'viewer' } }, async () => service.verifyAudit());

  // Who the presented token is: the console shows it and disables what the role may not do.
  app.get('/v1/admin/whoami', { schema: routeSchemas.whoami, config: { role: 'viewer' } }, async (request) => request.admin!);

  app.get('/v1/admin/summary', { schema: routeSchemas.summary, config: { role: 'viewer' } }, async () => buildSummary(service));

  app.post(
    '/v1/admin/sessions/:sessionId/kill',
    { schema: routeSchemas.killSession, config: { role: 'operator' } },
    async (request) =>
      service.killSession(
        (request.params as { sessionId: string }).sessionId,
        bodyOf<{ reason: string }>(request).reason,
        request.admin!.name,
        ctx(request),
      ),
  );

  registerInsightRoutes(app, service);

  // ---- operations ----
  app.get('/metrics', { schema: routeSchemas.metrics }, async (request, reply) => {
    const { contentType, body } = await deps.renderMetrics(request.headers.accept);
    return reply.type(contentType).send(body);
  });
  app.get('/healthz', { schema: routeSchemas.healthz }, async () => ({ status: 'ok' as const }));
  app.get('/readyz', { schema: routeSchemas.readyz }, async (_request, reply) => {
    if (deps.shutdownSignal.aborted) throw deps.shutdownSignal.reason;
    await service.checkReady();
    return reply.send({ status: 'ready', backend: service.backend });
  });
  serveOpenApi(app);

  function sendError(reply: FastifyReply, request: FastifyRequest, error: unknown) {
    const failure = toHoldfastError(error);
    request.errorCode = failure.code;
    if (failure instanceof DrainingError) request.draining = true;
    // A caller that went away mid-wait is not a server bug: nothing to report.
    if (failure instanceof InternalError && !request.clientGone) {
      events.emit('request_failed', ctx(request), {
        method: request.method,
        route: request.routeOptions?.url ?? 'unknown',
        status: 500,
        message: (error as Error)?.stack ?? String(error),
      });
    }
    if (failure.retryAfterSeconds !== undefined) reply.header('retry-after', String(failure.retryAfterSeconds));
    return reply.code(failure.status).type('application/json').send(failure.toBody());
  }

  return app;
}

/** The bearer token of `Authorization: Bearer <token>`, or undefined when absent or malformed. */
function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer ([^\s]+)$/i.exec(header) : null;
  return match ? match[1]! : undefined;
}

/** Any failure to the pinned error shape: framework 4xx are malformed input, the rest a bug. */
function toHoldfastError(error: unknown): HoldfastError {
  if (error instanceof HoldfastError) return error;
  const e = error as { validation?: unknown; statusCode?: number; message?: string; code?: string };
  if (e.validation) return new ValidationFailedError(`invalid request: ${e.message}`);
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new ValidationFailedError(`malformed request: ${e.message ?? e.code}`);
  }
  return new InternalError('internal error; see the server log for this request id');
}

/** The A5 summary's recent rates and S1 figures, from the same outcome the metric got. */
function recordActivity(service: LockService, route: MeasuredRoute, outcome: MeasuredOutcome) {
  service.activity.record(`${route}:${outcome}`);
  if (!isS1Counted(outcome)) return;
  service.activity.record('slo:requests');
  if (isS1Bad(outcome)) service.activity.record('slo:bad');
}
