/**
 * An in-memory model of the C3 lock routes the SDK uses (L1–L7), for the
 * clock-driven unit tests and the seeded simulation. It keeps the contract's
 * rules — strictly increasing tokens, idempotent L4 for the holder, L5/L6
 * compare on (key, token), TTL expiry of locks and sessions, a grant of the
 * `mode`/`limit` L4 asked for (v3; still one holder per key), the session
 * capability (L1 hands out a sessionToken; L2–L6 need it as a bearer token:
 * 404 for a session that is not live, 401 for a wrong or missing token) — and
 * takes its time from the same Clock as the clients. Real-server behaviour is covered
 * by test/client/real-server.test.ts against `startServer()`.
 *
 * `intercept` lets a test script the answer to a request (always 409, two
 * NOT_LEADERs then the real answer, ...).
 */
import type { Clock } from '../../../client/clock.js';
import type { TransportRequest, TransportResponse } from '../../../client/transport.js';

export type Route = 'L1' | 'L2' | 'L3' | 'L4' | 'L5' | 'L6' | 'L7' | '?';

export interface RecordedCall {
  route: Route;
  at: number;
  path: string;
  body: Record<string, unknown>;
  /** The `authorization` header as sent, if any. */
  authorization: string | undefined;
}

interface Session {
  id: string;
  token: string;
  owner: string;
  ttlMillis: number;
  expiresAt: number;
}

interface Lock {
  key: string;
  sessionId: string;
  token: bigint;
  ttlMillis: number;
  grantedAt: number;
  expiresAt: number;
  /** v3: as L4 asked (one holder per key all the same: the model keeps mutexes only). */
  mode: string;
  limit: number;
}

export interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export class FakeLockServer {
  readonly calls: RecordedCall[] = [];
  backendHeader: string | null = 'embedded';
  /** Return an Answer to replace the model's; undefined to let the model answer. */
  intercept: ((call: RecordedCall) => Answer | undefined) | undefined;
  private readonly sessions = new Map<string, Session>();
  private readonly locks = new Map<string, Lock>();
  private nextToken = 1n;
  private nextSession = 1;
  private nextRequest = 1;

  constructor(private readonly clock: Clock) {}

  count(route: Route): number {
    return this.calls.filter((c) => c.route === route).length;
  }

  /** Operator force-revoke (A3) without HTTP. */
  revoke(key: string): boolean {
    return this.locks.delete(key);
  }

  /** Operator session kill (A6) without HTTP. */
  kill(sessionId: string): void {
    this.sessions.delete(sessionId);
    for (const [key, lock] of this.locks) if (lock.sessionId === sessionId) this.locks.delete(key);
  }

  /** The live holder of `key` at the current instant, if any. */
  holder(key: string): { sessionId: string; token: string } | undefined {
    const lock = this.liveLock(key, this.clock.now());
    return lock && { sessionId: lock.sessionId, token: String(lock.token) };
  }

  handle(request: TransportRequest): TransportResponse {
    const now = this.clock.now();
    const call: RecordedCall = {
      route: routeOf(request),
      at: now,
      path: request.path,
      body: (request.body ?? {}) as Record<string, unknown>,
      authorization: headerOf(request, 'authorization'),
    };
    this.calls.push(call);
    const answer = this.intercept?.(call) ?? this.answer(call, now);
    const headers: Record<string, string> = { 'x-request-id': `req-${this.nextRequest++}`, ...answer.headers };
    if (this.backendHeader !== null) headers['holdfast-backend'] = this.backendHeader;
    return {
      status: answer.status,
      header: (name) => headers[name.toLowerCase()] ?? null,
      body: answer.body,
    };
  }

  private answer(call: RecordedCall, now: number): Answer {
    const segments = call.path.split('/').map(decodeURIComponent);
    const body = call.body;
    switch (call.route) {
      case 'L1': {
        const ttlMillis = (body.ttlMillis as number | undefined) ?? 15_000;
        if (!inRange(ttlMillis, 1_000, 300_000)) return error(400, 'VALIDATION_FAILED', 'ttlMillis');
        const id = `s${this.nextSession++}`;
        const session: Session = {
          id,
          token: `secret-token-of-${id}-${'x'.repeat(22)}`,
          owner: (body.owner as string | undefined) ?? 'anonymous',
          ttlMillis,
          expiresAt: now + ttlMillis,
        };
        this.sessions.set(session.id, session);
        return {
          status: 201,
          body: { sessionId: session.id, sessionToken: session.token, owner: session.owner, ttlMillis, expiresAt: session.expiresAt },
        };
      }
      case 'L2': {
        const session = this.liveSession(segments[3]!, now);
        if (!session) return error(404, 'SESSION_NOT_FOUND', 'no session');
        if (!authorized(call, session)) return error(401, 'UNAUTHENTICATED', 'wrong session token');
        session.expiresAt = now + session.ttlMillis;
        return { status: 200, body: { sessionId: session.id, expiresAt: session.expiresAt } };
      }
      case 'L3': {
        const id = segments[3]!;
        const session = this.liveSession(id, now);
        if (!session) return error(404, 'SESSION_NOT_FOUND', 'no session');
        if (!authorized(call, session)) return error(401, 'UNAUTHENTICATED', 'wrong session token');
        this.kill(id);
        return { status: 204 };
      }
      case 'L4': {
        const key = segments[3]!;
        const session = this.liveSession(body.sessionId as string, now);
        if (!session) return error(404, 'SESSION_NOT_FOUND', 'no session');
        if (!authorized(call, session)) return error(401, 'UNAUTHENTICATED', 'wrong session token');
        const ttlMillis = (body.ttlMillis as number | undefined) ?? 30_000;
        if (!inRange(ttlMillis, 1_000, 600_000)) return error(400, 'VALIDATION_FAILED', 'ttlMillis');
        const waitMillis = (body.waitMillis as number | undefined) ?? 0;
        if (!inRange(waitMillis, 0, 30_000)) return error(400, 'VALIDATION_FAILED', 'waitMillis');
        const held = this.liveLock(key, now);
        if (held && held.sessionId === session.id) return { status: 200, body: grantBody(held) };
        if (held) return error(409, 'LOCK_CONTENDED', 'held', true);
        const lock: Lock = {
          key,
          sessionId: session.id,
          token: this.nextToken++,
          ttlMillis,
          grantedAt: now,
          expiresAt: now + ttlMillis,
          mode: (body.mode as string | undefined) ?? 'exclusive',
          limit: (body.limit as number | undefined) ?? 1,
        };
        this.locks.set(key, lock);
        return { status: 200, body: grantBody(lock) };
      }
      case 'L5':
      case 'L6': {
        const key = segments[3]!;
        const session = this.liveSession(body.sessionId as string, now);
        if (!session) return error(404, 'SESSION_NOT_FOUND', 'no session');
        if (!authorized(call, session)) return error(401, 'UNAUTHENTICATED', 'wrong session token');
        const held = this.liveLock(key, now);
        if (!held || held.sessionId !== session.id || String(held.token) !== body.fencingToken) {
          return error(409, 'LOCK_LOST', 'not held');
        }
        if (call.route === 'L6') {
          this.locks.delete(key);
          return { status: 200, body: { key, released: true } };
        }
        held.ttlMillis = (body.ttlMillis as number | undefined) ?? held.ttlMillis;
        held.expiresAt = now + held.ttlMillis;
        return { status: 200, body: grantBody(held) };
      }
      case 'L7': {
        const key = segments[3]!;
        const held = this.liveLock(key, now);
        return {
          status: 200,
          body: held
            ? { key, held: true, sessionId: held.sessionId, fencingToken: String(held.token), waiterCount: 0 }
            : { key, held: false, waiterCount: 0 },
        };
      }
      default:
        return error(404, 'NOT_FOUND', call.path);
    }
  }

  private liveSession(id: string, now: number): Session | undefined {
    const session = this.sessions.get(id);
    if (session && now >= session.expiresAt) {
      this.kill(id);
      return undefined;
    }
    return session;
  }

  private liveLock(key: string, now: number): Lock | undefined {
    const lock = this.locks.get(key);
    if (!lock) return undefined;
    if (now >= lock.expiresAt || !this.liveSession(lock.sessionId, now)) {
      this.locks.delete(key);
      return undefined;
    }
    return lock;
  }
}

export function error(status: number, code: string, message: string, retryable = false): Answer {
  const headers: Record<string, string> = status === 429 || status === 503 ? { 'retry-after': '1' } : {};
  return { status, body: { error: { code, message, retryable } }, headers };
}

function grantBody(lock: Lock): Record<string, unknown> {
  return {
    key: lock.key,
    sessionId: lock.sessionId,
    fencingToken: String(lock.token),
    ttlMillis: lock.ttlMillis,
    grantedAt: lock.grantedAt,
    expiresAt: lock.expiresAt,
    mode: lock.mode,
    limit: lock.limit,
  };
}

function authorized(call: RecordedCall, session: Session): boolean {
  return call.authorization === `Bearer ${session.token}`;
}

function headerOf(request: TransportRequest, name: string): string | undefined {
  const entry = Object.entries(request.headers ?? {}).find(([k]) => k.toLowerCase() === name);
  return entry?.[1];
}

function inRange(value: number, min: number, max: number): boolean {
  return Number.isInteger(value) && value >= min && value <= max;
}

function routeOf(request: TransportRequest): Route {
  const p = request.path;
  if (request.method === 'POST' && p === '/v1/sessions') return 'L1';
  if (request.method === 'POST' && /^\/v1\/sessions\/[^/]+\/heartbeat$/.test(p)) return 'L2';
  if (request.method === 'DELETE' && /^\/v1\/sessions\/[^/]+$/.test(p)) return 'L3';
  if (request.method === 'POST' && /^\/v1\/locks\/[^/]+\/acquire$/.test(p)) return 'L4';
  if (request.method === 'POST' && /^\/v1\/locks\/[^/]+\/renew$/.test(p)) return 'L5';
  if (request.method === 'POST' && /^\/v1\/locks\/[^/]+\/release$/.test(p)) return 'L6';
  if (request.method === 'GET' && /^\/v1\/locks\/[^/]+$/.test(p)) return 'L7';
  return '?';
}
