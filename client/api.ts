/**
 * Typed calls for the routes the SDK uses (C3 L1–L8). Expected answers —
 * including every C3 error — come back as values so the retry logic can
 * branch on them; only a transport failure (no answer at all) throws.
 *
 * Credentials: L2–L6 carry the calling session's `sessionToken` as
 * `Authorization: Bearer`, passed in by the session on every call (never stored
 * here); L1, L7 and L8 carry the client token when the application configured one
 * (servers with `client` tokens require it). Neither ever reaches an error
 * message: bodies are previewed with any `sessionToken` field redacted.
 */
import { context, propagation } from './otel.js';
import { parseBackend, type BackendLabel } from './backend-label.js';
import { EndpointsUnansweredError } from './endpoints.js';
import { NotLeaderError, ServerError, ValidationError } from './errors.js';
import type { HttpMethod, Transport, TransportResponse } from './transport.js';
import {
  isFencingToken,
  type FencingToken,
  type HeartbeatAck,
  type LockGrant,
  type LockInfo,
  type LockMode,
  type Released,
  type SessionOpened,
} from './wire.js';

interface Answered {
  status: number;
  requestId: string | undefined;
  /** Undefined when the header was missing or outside the closed set. */
  backend: BackendLabel | undefined;
}

export interface ApiSuccess<T> extends Answered {
  ok: true;
  value: T;
}

export interface ApiFailure extends Answered {
  ok: false;
  /** The C3 code, or `UNKNOWN` when the body was not a C3 error. */
  code: string;
  message: string;
  retryable: boolean;
  /** From `Retry-After` (seconds) on 429 and 503. */
  retryAfterMillis: number | undefined;
}

export type ApiResult<T> = ApiSuccess<T> | ApiFailure;

export class LockApi {
  readonly #clientToken: string | undefined;

  constructor(
    private readonly transport: Transport,
    clientToken?: string,
  ) {
    this.#clientToken = clientToken;
  }

  openSession(body: { ttlMillis?: number; owner?: string }, signal?: AbortSignal): Promise<ApiResult<SessionOpened>> {
    return this.call('POST', '/v1/sessions', body, signal, this.#clientToken, 201, isSessionOpened);
  }

  heartbeat(sessionId: string, sessionToken: string, signal?: AbortSignal): Promise<ApiResult<HeartbeatAck>> {
    return this.call('POST', `/v1/sessions/${encodeURIComponent(sessionId)}/heartbeat`, {}, signal, sessionToken, 200, isObject);
  }

  closeSession(sessionId: string, sessionToken: string, signal?: AbortSignal): Promise<ApiResult<undefined>> {
    return this.call('DELETE', `/v1/sessions/${encodeURIComponent(sessionId)}`, undefined, signal, sessionToken, 204, anyBody);
  }

  acquire(
    key: string,
    /** `mode`/`limit` (v3): sent only when not a mutex's (`exclusive`, 1). */
    body: { sessionId: string; ttlMillis?: number; waitMillis?: number; value?: string; mode?: LockMode; limit?: number },
    sessionToken: string,
    signal?: AbortSignal,
  ): Promise<ApiResult<LockGrant>> {
    return this.call('POST', lockPath(key, 'acquire'), body, signal, sessionToken, 200, isGrant);
  }

  renew(
    key: string,
    /** `value` makes it a proclaim (v3): the grant's value is replaced, same token. */
    body: { sessionId: string; fencingToken: FencingToken; ttlMillis?: number; value?: string },
    sessionToken: string,
    signal?: AbortSignal,
  ): Promise<ApiResult<LockGrant>> {
    return this.call('POST', lockPath(key, 'renew'), body, signal, sessionToken, 200, isGrant);
  }

  release(
    key: string,
    body: { sessionId: string; fencingToken: FencingToken },
    sessionToken: string,
    signal?: AbortSignal,
  ): Promise<ApiResult<Released>> {
    return this.call('POST', lockPath(key, 'release'), body, signal, sessionToken, 200, isObject);
  }

  readLock(key: string, signal?: AbortSignal): Promise<ApiResult<LockInfo>> {
    return this.call('GET', `/v1/locks/${encodeURIComponent(key)}`, undefined, signal, this.#clientToken, 200, isLockInfo);
  }

  /**
   * L8 (v3): a long poll that answers once the key's highest holder token is not `after`
   * (absent: answer now), or after `waitMillis` with the unchanged state. L7's access: the client token.
   */
  watchLock(key: string, after: FencingToken | undefined, waitMillis: number, signal?: AbortSignal): Promise<ApiResult<LockInfo>> {
    // A free key seen last (`after` 0) is waited out, not answered at once (L8's `untilHeld` extension).
    const query = `${after === undefined ? '' : `after=${after}&`}${after === '0' ? 'untilHeld=true&' : ''}waitMillis=${waitMillis}`;
    const path = `/v1/locks/${encodeURIComponent(key)}/watch?${query}`;
    return this.call('GET', path, undefined, signal, this.#clientToken, 200, isLockInfo);
  }

  /** One request; `token` goes out as `Authorization: Bearer` unless absent or empty. */
  private async call<T>(
    method: HttpMethod,
    path: string,
    body: unknown,
    signal: AbortSignal | undefined,
    token: string | undefined,
    successStatus: number,
    accept: (body: unknown) => boolean,
  ): Promise<ApiResult<T>> {
    // One headers object per request, handed to the transport as is (this is every L4 and L6).
    const headers: Record<string, string> = token === undefined || token === '' ? {} : { authorization: `Bearer ${token}` };
    // Carry the caller's trace context so the server's lock.acquire span joins the SDK's.
    propagation.inject(context.active(), headers);
    const response = await this.transport.send({ method, path, body, headers, signal });
    const status = response.status;
    const requestId = response.header('x-request-id') ?? undefined;
    const backend = parseBackend(response.header('holdfast-backend'));
    if (status === successStatus) {
      if (!accept(response.body)) {
        throw new ServerError(status, 'UNKNOWN', `unexpected ${method} ${path} body: ${preview(response.body)}`, requestId);
      }
      return { ok: true, value: response.body as T, status, requestId, backend };
    }
    return { ok: false, status, requestId, backend, ...decodeError(response) };
  }
}

/** The NOT_LEADER the servers answered beside an endpoint that did not answer (EndpointsUnansweredError), if that is what they said. */
export function notLeaderBeside(error: unknown): { message: string; requestId: string | undefined } | undefined {
  if (!(error instanceof EndpointsUnansweredError)) return undefined;
  const said = decodeError(error.lastAnswer);
  return said.code === 'NOT_LEADER' ? { message: said.message, requestId: error.lastAnswer.header('x-request-id') ?? undefined } : undefined;
}

function lockPath(key: string, action: string): string {
  return `/v1/locks/${encodeURIComponent(key)}/${action}`;
}

function decodeError(
  response: TransportResponse,
): Pick<ApiFailure, 'code' | 'message' | 'retryable' | 'retryAfterMillis'> {
  const retryAfter = Number(response.header('retry-after'));
  const retryAfterMillis = Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter * 1000 : undefined;
  const error = isObject(response.body) ? (response.body as { error?: unknown }).error : undefined;
  if (isObject(error)) {
    const { code, message, retryable } = error as { code?: unknown; message?: unknown; retryable?: unknown };
    if (typeof code === 'string') {
      return {
        code,
        message: typeof message === 'string' ? message : code,
        retryable: retryable === true,
        retryAfterMillis,
      };
    }
  }
  return {
    code: 'UNKNOWN',
    message: `HTTP ${response.status}: ${preview(response.body)}`,
    retryable: false,
    retryAfterMillis,
  };
}

function preview(body: unknown): string {
  // A malformed L1 answer may still carry the session token: it must not reach an error message.
  const text =
    typeof body === 'string'
      ? body
      : JSON.stringify(body, (field, value: unknown) => (field === 'sessionToken' ? '[redacted]' : value));
  return text === undefined ? '(empty)' : text.slice(0, 200);
}

function anyBody(): boolean {
  return true;
}

function isObject(body: unknown): boolean {
  return typeof body === 'object' && body !== null;
}

function isSessionOpened(body: unknown): boolean {
  if (!isObject(body)) return false;
  const opened = body as SessionOpened;
  return typeof opened.sessionId === 'string' && typeof opened.sessionToken === 'string' && opened.sessionToken !== '';
}

function isGrant(body: unknown): boolean {
  if (!isObject(body)) return false;
  const grant = body as LockGrant;
  return (
    typeof grant.key === 'string' &&
    typeof grant.fencingToken === 'string' &&
    isFencingToken(grant.fencingToken) &&
    typeof grant.ttlMillis === 'number'
  );
}

function isLockInfo(body: unknown): boolean {
  return isObject(body) && typeof (body as LockInfo).held === 'boolean';
}

/** The SDK error for a C3 failure the caller has to see. */
export function failureToError(answer: ApiFailure): Error {
  switch (answer.code) {
    case 'VALIDATION_FAILED':
      return new ValidationError(answer.message, answer.requestId);
    case 'NOT_LEADER':
      return new NotLeaderError(answer.message, answer.requestId);
    default:
      return new ServerError(answer.status, answer.code, answer.message, answer.requestId);
  }
}
