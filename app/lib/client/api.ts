'use client';
/**
 * Browser → console route handlers. Never talks to the lock server directly and
 * never sees the admin token (it is in an httpOnly cookie).
 */
import type { ConsoleError } from '../api-types';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, { cache: 'no-store', signal, headers: { accept: 'application/json' } });
  } catch (cause) {
    if (signal?.aborted) throw cause;
    throw new ApiError(0, 'CONSOLE_UNREACHABLE', 'the console itself is not answering', true);
  }
  return parse<T>(response);
}

export async function postJson<T>(path: string, body: unknown, csrfToken: string): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method: 'POST',
      cache: 'no-store',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'x-csrf-token': csrfToken },
      body: JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'CONSOLE_UNREACHABLE', 'the console itself is not answering', true);
  }
  return parse<T>(response);
}

async function parse<T>(response: Response): Promise<T> {
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    throw new ApiError(response.status, 'BAD_RESPONSE', `unexpected answer (${response.status})`, true);
  }
  if (!response.ok) {
    const error = (body as ConsoleError | null)?.error;
    throw new ApiError(
      response.status,
      error?.code ?? 'HTTP_' + response.status,
      error?.message ?? `request failed (${response.status})`,
      error?.retryable ?? response.status >= 500,
    );
  }
  return body as T;
}

/** Retry transient failures forever (the banner says so); never retry auth or validation errors. */
export function shouldRetry(failureCount: number, error: unknown): boolean {
  if (error instanceof ApiError && (error.status === 401 || error.status === 403 || error.status === 400)) return false;
  return failureCount < 2;
}
