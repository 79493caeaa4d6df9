/**
 * The console's sign-in state: a cookie sealed with iron-session (encrypted and
 * authenticated with a per-process secret) holding a console session id and the
 * admin token, httpOnly and SameSite=Strict, so browser JavaScript never sees the
 * token; route handlers unseal it and send the token to the lock server.
 *
 * A sealed cookie alone would stay valid after sign-out (whoever copied it could
 * replay it until it expires), so the console also keeps the set of live session
 * ids (process-state.ts): a cookie counts only while its id is in that set, and
 * signing out removes it. A console restart empties the set — everyone signs in
 * again.
 *
 * Admin actions (revoke, kill) are CSRF-safe three ways: the cookie is
 * SameSite=Strict, the Origin header must name this console, and the request must
 * carry a CSRF token derived from the console session id (HMAC with the process
 * secret), which a cross-site page cannot read or compute.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { getIronSession, type SessionOptions } from 'iron-session';
import { cookies } from 'next/headers';
import type { Identity, Role } from '../api-types';
import { processState } from './process-state';
import { errorBody } from './upstream';

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

/** The signed-in console session, or null (no cookie, a cookie that does not unseal, or one signed out). */
export async function readSession(): Promise<ConsoleSession | null> {
  const value = await sealedCookie();
  const { sid, token, name } = value;
  if (typeof sid !== 'string' || typeof token !== 'string' || token.length === 0) return null;
  if (!sessionIsLive(sid)) return null;
  const role: Role = value.role === 'operator' || value.role === 'unknown' ? value.role : 'viewer';
  return { sid, token, name: typeof name === 'string' ? name : 'unknown', role };
}

/** Start a console session for this token and set its sealed cookie. */
export async function writeSession(signIn: Omit<ConsoleSession, 'sid'>, request: Request): Promise<ConsoleSession> {
  const { sessions } = processState();
  const now = Date.now();
  for (const [id, endsAt] of sessions) if (endsAt <= now) sessions.delete(id);
  const session: ConsoleSession = { sid: randomBytes(18).toString('base64url'), ...signIn };
  sessions.set(session.sid, now + SESSION_MAX_AGE_SECONDS * 1000);
  const cookie = await sealedCookie(isHttps(request));
  Object.assign(cookie, session);
  await cookie.save();
  return session;
}

/** Sign out: the session id stops counting at once, so a copy of the cookie is useless too. */
export async function clearSession(): Promise<void> {
  const cookie = await sealedCookie();
  if (typeof cookie.sid === 'string') processState().sessions.delete(cookie.sid);
  cookie.destroy();
}

function sessionIsLive(sid: string): boolean {
  const { sessions } = processState();
  const endsAt = sessions.get(sid);
  if (endsAt === undefined) return false;
  if (endsAt <= Date.now()) {
    sessions.delete(sid);
    return false;
  }
  return true;
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
