/**
 * The console's sign-in state. The admin token lives only in an httpOnly,
 * SameSite=Strict cookie, so browser JavaScript never sees it; route handlers
 * read it and send it to the lock server as a bearer token.
 *
 * Admin actions (revoke, kill) are CSRF-safe three ways: the cookie is
 * SameSite=Strict, the Origin header must name this console, and the request must
 * carry a CSRF token derived from the session's token (HMAC), which a
 * cross-site page cannot read or compute.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { cookies } from 'next/headers';
import type { Identity, Role } from '../api-types';
import { errorBody } from './upstream';

export const SESSION_COOKIE = 'holdfast_console';
const SESSION_MAX_AGE_SECONDS = 12 * 60 * 60;

export interface ConsoleSession {
  token: string;
  name: string;
  role: Role;
}

export function csrfTokenFor(token: string): string {
  return createHmac('sha256', token).update('holdfast-console-csrf-v1').digest('base64url');
}

export function identityOf(session: ConsoleSession): Identity {
  return { name: session.name, role: session.role, csrfToken: csrfTokenFor(session.token) };
}

export async function readSession(): Promise<ConsoleSession | null> {
  const raw = (await cookies()).get(SESSION_COOKIE)?.value;
  return raw ? decodeSession(raw) : null;
}

export function encodeSession(session: ConsoleSession): string {
  return Buffer.from(JSON.stringify(session), 'utf8').toString('base64url');
}

function decodeSession(raw: string): ConsoleSession | null {
  try {
    const value = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Partial<ConsoleSession>;
    if (typeof value.token !== 'string' || value.token.length === 0) return null;
    const role: Role = value.role === 'operator' || value.role === 'unknown' ? value.role : 'viewer';
    return { token: value.token, name: typeof value.name === 'string' ? value.name : 'unknown', role };
  } catch {
    return null;
  }
}

export async function writeSession(session: ConsoleSession, request: Request): Promise<void> {
  (await cookies()).set(SESSION_COOKIE, encodeSession(session), {
    httpOnly: true,
    sameSite: 'strict',
    path: '/',
    secure: isHttps(request),
    maxAge: SESSION_MAX_AGE_SECONDS,
  });
}

export async function clearSession(): Promise<void> {
  (await cookies()).delete(SESSION_COOKIE);
}

function isHttps(request: Request): boolean {
  const forwarded = request.headers.get('x-forwarded-proto');
  if (forwarded) return forwarded.split(',')[0]?.trim() === 'https';
  return new URL(request.url).protocol === 'https:';
}

/** Same-origin check on state-changing requests: the Origin header must name this console. */
export function sameOrigin(request: Request): boolean {
  const origin = request.headers.get('origin');
  if (!origin) return false;
  const host = request.headers.get('x-forwarded-host') ?? request.headers.get('host');
  try {
    return host !== null && new URL(origin).host === host;
  } catch {
    return false;
  }
}

function csrfMatches(request: Request, session: ConsoleSession): boolean {
  const sent = request.headers.get('x-csrf-token') ?? '';
  const expected = csrfTokenFor(session.token);
  const a = Buffer.from(sent);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A JSON error response with the C3 body shape. */
export function refuse(status: number, code: string, message: string): Response {
  return Response.json(errorBody(code, message, false), { status, headers: { 'cache-control': 'no-store' } });
}

/** For reads: the signed-in session, or a 401 response to return. */
export async function requireSession(): Promise<ConsoleSession | Response> {
  const session = await readSession();
  return session ?? refuse(401, 'UNAUTHENTICATED', 'not signed in to the console');
}

/**
 * For admin actions: the session if this is a same-origin operator request with a
 * valid CSRF token, else the response to return. The lock server checks the role
 * again; this check only keeps a viewer's click from reaching it at all.
 */
export async function requireOperatorAction(request: Request): Promise<ConsoleSession | Response> {
  if (!sameOrigin(request)) return refuse(403, 'FORBIDDEN', 'cross-origin admin action refused');
  const session = await readSession();
  if (!session) return refuse(401, 'UNAUTHENTICATED', 'not signed in to the console');
  if (!csrfMatches(request, session)) return refuse(403, 'FORBIDDEN', 'missing or wrong CSRF token; reload the page');
  if (session.role === 'viewer') {
    return refuse(403, 'FORBIDDEN', `signed in as ${session.name} with the viewer role; admin actions need an operator token`);
  }
  return session;
}
