/**
 * What a request carries through the hooks to its handler, and the small readers
 * every route uses: its event context, its key, body, bearer token and session.
 */
import type { FastifyRequest } from 'fastify';
import type { MeasuredRequest, MeasuredRoute } from '../../contract/http-events.js';
import type { EventContext, TraceRef } from '../../contract/lock-events.js';
import type { AdminIdentity, AdminRole } from '../admin-tokens.js';
import { sessionCredential } from '../core/session-token.js';
import type { SessionCredential } from '../store/spi.js';
import { ValidationFailedError } from '../errors.js';
import { decodeKeySegment } from './validation.js';

declare module 'fastify' {
  interface FastifyRequest {
    errorCode?: string;
    clientGone?: boolean;
    /** L1/L7 on a server that needs client tokens: the presented token's name (its session remembers it). */
    clientTokenName?: string;
    /**
     * The key prefixes of the presented token (any role) when it is scoped; absent = every key.
     * Routes apply it through key-scope.ts.
     */
    scope?: readonly string[];
    /** The admin token's identity (never a client token: those are 403 on admin routes). */
    admin?: AdminIdentity & { role: AdminRole };
    /** Span, metric and exemplar of an L4/L5/L6 request. */
    measured?: MeasuredRequest;
    /** The span this request's log events name (server span, else the caller's). */
    eventTrace?: TraceRef;
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

/** The request id and span every fact of this request is reported with. */
/** The admin behind an audited action, with its token's prefixes when it is scoped (the entry records them). */
export function auditActorOf(request: FastifyRequest): { name: string; scope?: readonly string[] } {
  const admin = request.admin!;
  return { name: admin.name, ...(admin.prefixes !== undefined ? { scope: admin.prefixes } : {}) };
}

export function eventContext(request: FastifyRequest): EventContext {
  return { requestId: request.id, ...(request.eventTrace ? { trace: request.eventTrace } : {}) };
}

/** Runs a measured handler inside its server span, so store calls are its children. */
export function inSpan<T>(request: FastifyRequest, work: () => Promise<T>): Promise<T> {
  return request.measured ? request.measured.run(work) : work();
}

/**
 * The request target as a path: an absolute-form target (`http://host/v1/...`, which HTTP/1.1 servers
 * must accept, RFC 9112 §3.2.2) loses its scheme and authority.
 */
export function rawPathOf(request: FastifyRequest): string {
  return request.url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '');
}

/** The lock key from the raw path (the router's decoding would split an encoded `/`). */
export function keyOf(request: FastifyRequest): string {
  const raw = /^\/v1\/(?:admin\/)?locks\/([^/?#]+)/.exec(rawPathOf(request))?.[1];
  if (raw === undefined) throw new ValidationFailedError('lock key missing from the path');
  return decodeKeySegment(raw);
}

/** The validated body (an absent one is the empty object). */
export function bodyOf<T>(request: FastifyRequest): T {
  return (request.body ?? {}) as T;
}

/** The `:sessionId` path parameter (validated by the route's schema). */
export function sessionIdParam(request: FastifyRequest): string {
  return (request.params as { sessionId: string }).sessionId;
}

/** The bearer token of `Authorization: Bearer <token>`, or undefined when absent or malformed. */
export function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer ([^\s]+)$/i.exec(header) : null;
  return match ? match[1]! : undefined;
}

/** The session named by the route, with the sessionToken the caller presented (if any). */
export function credentialOf(request: FastifyRequest, sessionId: string): SessionCredential {
  return sessionCredential(sessionId, bearerOf(request));
}
