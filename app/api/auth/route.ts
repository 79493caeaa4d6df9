/**
 * Sign in (POST) and sign out (DELETE).
 *
 * POST takes `{"code": "…"}` — the one-time code from a sign-in link (see
 * /api/auth/codes) — or `{"token": "…"}`, a pasted admin token. Either way the
 * token travels browser → console at most once and is then kept only in the
 * sealed, httpOnly session cookie.
 */
import { clearSession, identityOf, refuse, sameOrigin, writeSession } from '../../lib/server/auth';
import { resolveIdentity } from '../../lib/server/identity';
import { redeemSignInCode } from '../../lib/server/signin-codes';

export const dynamic = 'force-dynamic';

const MAX_TOKEN_LENGTH = 4096;

export async function POST(request: Request): Promise<Response> {
  // Origin check also stops login CSRF (a foreign page signing you in as someone else).
  if (!sameOrigin(request)) return refuse(403, 'FORBIDDEN', 'cross-origin sign-in refused');
  let body: { token?: unknown; code?: unknown };
  try {
    body = (await request.json()) as { token?: unknown; code?: unknown };
  } catch {
    return refuse(400, 'VALIDATION_FAILED', 'body must be JSON: {"code": "..."} or {"token": "..."}');
  }
  if (typeof body !== 'object' || body === null) {
    return refuse(400, 'VALIDATION_FAILED', 'body must be JSON: {"code": "..."} or {"token": "..."}');
  }
  if (body.code !== undefined) {
    if (typeof body.code !== 'string' || body.code.length === 0 || body.code.length > 256) {
      return refuse(400, 'VALIDATION_FAILED', 'code must be the string from the sign-in link');
    }
    const signIn = redeemSignInCode(body.code);
    if (!signIn) {
      return refuse(401, 'UNAUTHENTICATED', 'this sign-in link was already used or has expired; run npm start again for a new one, or paste a token');
    }
    const session = await writeSession(signIn, request);
    return Response.json(identityOf(session), { headers: { 'cache-control': 'no-store' } });
  }
  const token = typeof body.token === 'string' ? body.token.trim() : '';
  if (token.length === 0 || token.length > MAX_TOKEN_LENGTH) return refuse(400, 'VALIDATION_FAILED', 'paste a token');
  const identity = await resolveIdentity(token);
  if (!identity.ok) {
    const message =
      identity.status === 401 || identity.status === 403
        ? 'the lock server does not accept this token'
        : identity.body.error.message;
    return Response.json({ error: { ...identity.body.error, message } }, { status: identity.status });
  }
  const session = await writeSession({ token, name: identity.body.name, role: identity.body.role }, request);
  return Response.json(identityOf(session), { headers: { 'cache-control': 'no-store' } });
}

export async function DELETE(request: Request): Promise<Response> {
  if (!sameOrigin(request)) return refuse(403, 'FORBIDDEN', 'cross-origin sign-out refused');
  await clearSession();
  return new Response(null, { status: 204 });
}
