/**
 * The console's sign-in state: a cookie sealed with iron-session (encrypted and
 * authenticated with the console's secret, console-secret.ts) holding a console
 * session id and the admin token, httpOnly and SameSite=Strict, so browser
 * JavaScript never sees the token; route handlers unseal it and send the token to
 * the lock server.
 *
 * A sealed cookie alone would stay valid after sign-out (whoever copied it could
 * replay it until it expires), so a cookie counts only while the lock server says
 * its console session is live (K4, issue 25): every console request asks, signing
 * out ends the session there (K5), and from then on every console replica refuses
 * the cookie and any copy of it. A console restart changes nothing of this: the
 * sessions are the lock server's, and with HOLDFAST_CONSOLE_SECRET_FILE the
 * restarted console opens the cookies it sealed before.
 *
 * Admin actions (revoke, kill) are CSRF-safe three ways: the cookie is
 * SameSite=Strict, the Origin header must name this console, and the request must
 * carry a CSRF token derived from the console session id (HMAC with the console
 * secret), which a cross-site page cannot read or compute.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { getIronSession, type SessionOptions } from 'iron-session';
import { cookies } from 'next/headers';
import type { Identity, Role } from '../api-types';
import { processState } from './process-state';
import { callServer, errorBody, type UpstreamResult } from './upstream';

export const SESSION_COOKIE = 'holdfast_console';
const SESSION_MAX_AGE_SECONDS = 12 * 60 * 60;

export interface ConsoleSession {
  /** The console session id: the unit of sign-out. */
  sid: string;
  token: string;
  name: string;
  role: Role;
}

type SealedCookie = Partial<ConsoleSession>;

export function csrfTokenFor(sid: string): string {
  return createHmac('sha256', processState().secret).update(`holdfast-console-csrf-v2:${sid}`).digest('base64url');
}

export function identityOf(session: ConsoleSession): Identity {
  return { name: session.name, role: session.role, csrfToken: csrfTokenFor(session.sid) };
}

function cookieOptions(secure: boolean): SessionOptions {
  return {
    password: processState().secret,
    cookieName: SESSION_COOKIE,
    ttl: SESSION_MAX_AGE_SECONDS,
    cookieOptions: { httpOnly: true, sameSite: 'strict', path: '/', secure },
  };
}

async function sealedCookie(secure = false) {
  return getIronSession<SealedCookie>(await cookies(), cookieOptions(secure));
}

interface ConsoleSessionAnswer {
  consoleSessionId: string;
  name: string;
  role: 'viewer' | 'operator';
  expiresAt: number;
}

/**
 * The signed-in console session as the lock server sees it now (K4): the session, or the answer to
 * give instead — 401 when there is no cookie, it does not unseal, or its session ended (signed out
 * on any replica, expired, or its token no longer accepted); the lock server's own error when it
 * could not say (unreachable: the console shows that, not the sign-in page).
 */
export async function checkSession(): Promise<ConsoleSession | Response> {
  const value = await sealedCookie();
  const { sid, token } = value;
  if (typeof sid !== 'string' || typeof token !== 'string' || token.length === 0) return notSignedIn();
  const answer = await callServer<ConsoleSessionAnswer>(`/v1/console/sessions/${encodeURIComponent(sid)}`, { token });
  if (answer.ok) return { sid, token, name: answer.body.name, role: answer.body.role };
  if (answer.status === 401 || answer.status === 403 || answer.status === 404 || answer.status === 400) return notSignedIn();
  return upstreamError(answer);
}

/**
 * For server-rendered pages: the session, or null when not signed in. When the lock server cannot
 * say, the cookie's own identity renders the shell; every figure on it comes through routes that
 * check again (and show the lock server unreachable).
 */
export async function readSession(): Promise<ConsoleSession | null> {
  const checked = await checkSession();
  if (!(checked instanceof Response)) return checked;
  if (checked.status === 401) return null;
  const value = await sealedCookie();
  const role: Role = value.role === 'operator' || value.role === 'unknown' ? value.role : 'viewer';
  return typeof value.sid === 'string' && typeof value.token === 'string'
    ? { sid: value.sid, token: value.token, name: typeof value.name === 'string' ? value.name : 'unknown', role }
    : null;
}

/** Start a console session for this token on the lock server (K3) and set its sealed cookie. */
export async function writeSession(token: string, request: Request): Promise<ConsoleSession | Response> {
  const opened = await callServer<ConsoleSessionAnswer>('/v1/console/sessions', { token, method: 'POST' });
  if (!opened.ok) return upstreamError(opened);
  const session: ConsoleSession = { sid: opened.body.consoleSessionId, token, name: opened.body.name, role: opened.body.role };
  const cookie = await sealedCookie(isHttps(request));
  Object.assign(cookie, session);
  await cookie.save();
  return session;
}

/**
 * Sign out: the lock server ends the console session (K5), so every replica refuses the cookie and
 * any copy of it from now on. The cookie is dropped either way; when the lock server could not be
 * told, the answer says so (a copy of the cookie would still count until it can).
 */
export async function clearSession(): Promise<Response | null> {
  const cookie = await sealedCookie();
  const { sid, token } = cookie;
  cookie.destroy();
  if (typeof sid !== 'string' || typeof token !== 'string' || token.length === 0) return null;
  const ended = await callServer<null>(`/v1/console/sessions/${encodeURIComponent(sid)}`, { token, method: 'DELETE' });
  // A token the lock server no longer accepts has no session left to end.
  if (ended.ok || ended.status === 401 || ended.status === 403 || ended.status === 400) return null;
  return upstreamError(ended);
}

function notSignedIn(): Response {
  return refuse(401, 'UNAUTHENTICATED', 'not signed in to the console');
}

function upstreamError(answer: UpstreamResult<unknown>): Response {
  const body = answer.ok ? errorBody('BAD_UPSTREAM_RESPONSE', 'unexpected answer', true) : answer.body;
  return Response.json(body, { status: answer.status, headers: { 'cache-control': 'no-store' } });
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
  const expected = csrfTokenFor(session.sid);
  const a = Buffer.from(sent);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A JSON error response with the C3 body shape. */
export function refuse(status: number, code: string, message: string): Response {
  return Response.json(errorBody(code, message, false), { status, headers: { 'cache-control': 'no-store' } });
}

/** For reads: the signed-in session, or the response to return (401, or the lock server's error). */
export async function requireSession(): Promise<ConsoleSession | Response> {
  return checkSession();
}

/**
 * For admin actions: the session if this is a same-origin operator request with a
 * valid CSRF token, else the response to return. The lock server checks the role
 * again; this check only keeps a viewer's click from reaching it at all.
 */
export async function requireOperatorAction(request: Request): Promise<ConsoleSession | Response> {
  if (!sameOrigin(request)) return refuse(403, 'FORBIDDEN', 'cross-origin admin action refused');
  const session = await checkSession();
  if (session instanceof Response) return session;
  if (!csrfMatches(request, session)) return refuse(403, 'FORBIDDEN', 'missing or wrong CSRF token; reload the page');
  if (session.role === 'viewer') {
    return refuse(403, 'FORBIDDEN', `signed in as ${session.name} with the viewer role; admin actions need an operator token`);
  }
  return session;
}
