/**
 * The one place the console talks to the lock server. Every call carries the
 * signed-in token as a bearer header; failures come back as C3-shaped error
 * bodies so route handlers can pass them through unchanged.
 */
import { holdfastUrl, UPSTREAM_TIMEOUT_MILLIS } from './config';
import type { ConsoleError } from '../api-types';

export type UpstreamResult<T> =
  | { ok: true; status: number; body: T }
  | { ok: false; status: number; body: ConsoleError };

/** Console-only error codes (the rest are the server's C3 codes, passed through); also RATE_LIMITED (signin-limits.ts). */
export const UNREACHABLE = 'SERVER_UNREACHABLE';
export const BAD_UPSTREAM = 'BAD_UPSTREAM_RESPONSE';

export async function callServer<T>(
  path: string,
  init: { token?: string; method?: 'GET' | 'POST' | 'DELETE'; body?: unknown } = {},
): Promise<UpstreamResult<T>> {
  const url = `${holdfastUrl()}${path}`;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(url, {
      method: init.method ?? 'GET',
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      cache: 'no-store',
      signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MILLIS),
    });
  } catch (cause) {
    return {
      ok: false,
      status: 502,
      body: errorBody(UNREACHABLE, `no answer from ${holdfastUrl()} (${describe(cause)})`, true),
    };
  }
  const text = await response.text();
  let parsed: unknown = undefined;
  if (text.length > 0) {
    try {
      parsed = JSON.parse(text);
    } catch {
      return {
        ok: false,
        status: 502,
        body: errorBody(BAD_UPSTREAM, `lock server answered ${response.status} with a body that is not JSON`, true),
      };
    }
  }
  if (response.ok) return { ok: true, status: response.status, body: parsed as T };
  if (isErrorBody(parsed)) return { ok: false, status: response.status, body: parsed };
  return {
    ok: false,
    status: response.status,
    body: errorBody(response.status === 404 ? 'NOT_FOUND' : BAD_UPSTREAM, `lock server answered ${response.status}`, response.status >= 500),
  };
}

export function errorBody(code: string, message: string, retryable: boolean): ConsoleError {
  return { error: { code, message, retryable } };
}

export function isErrorBody(value: unknown): value is ConsoleError {
  if (typeof value !== 'object' || value === null) return false;
  const error = (value as { error?: unknown }).error;
  return typeof error === 'object' && error !== null && typeof (error as { code?: unknown }).code === 'string';
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = (cause as Error & { cause?: { code?: string } }).cause;
    if (inner?.code) return inner.code;
    if (cause.name === 'TimeoutError') return `no answer within ${UPSTREAM_TIMEOUT_MILLIS} ms`;
    return cause.message;
  }
  return String(cause);
}

/** Builds a JSON Response from an upstream result, never caching it. */
export function relay<T>(result: UpstreamResult<T>, map?: (body: T) => unknown): Response {
  const body = result.ok && map ? map(result.body) : result.body;
  if (result.ok && result.status === 204) return new Response(null, { status: 204 });
  return Response.json(body ?? null, { status: result.status, headers: { 'cache-control': 'no-store' } });
}
