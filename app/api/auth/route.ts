/**
 * Sign in (POST) and sign out (DELETE).
 *
 * POST takes `{"code": "…"}` — the one-time code from a sign-in link (see
 * /api/auth/codes) — or `{"token": "…"}`, a pasted admin token. Either way the
 * token travels browser → console at most once and is then kept only in the
 * sealed, httpOnly session cookie; the console session it names is the lock
 * server's (K3), so every console replica honours it and a sign-out (K5) ends it
 * for all of them.
 *
 * Failures are rate-limited per client address (signin-limits.ts, per console
 * process) and per code (the lock server's count, K2): past either limit the answer
 * is 429 RATE_LIMITED with Retry-After.
 */
import { clearSession, identityOf, refuse, sameOrigin, writeSession } from '../../lib/server/auth';
import { resolveIdentity } from '../../lib/server/identity';
import { redeemSignInCode } from '../../lib/server/signin-codes';
import { chargeSignInAttempt, clientAddress, rateLimited } from '../../lib/server/signin-limits';

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
    const attempt = chargeSignInAttempt(clientAddress(request));
    if ('retryAfterMillis' in attempt) return rateLimited(attempt.retryAfterMillis, 'too many failed sign-ins from this address');
    const redemption = await redeemSignInCode(body.code);
    if (!redemption.ok) {
      if ('upstream' in redemption) {
        attempt.refund();
        return Response.json(redemption.upstream.body, { status: redemption.upstream.status, headers: { 'cache-control': 'no-store' } });
      }
      if (redemption.lockedForMillis !== undefined) {
        attempt.refund();
        return rateLimited(redemption.lockedForMillis, 'too many wrong tries for this sign-in link (a new link from npm run signin-link works at once)');
      }
      return refuse(401, 'UNAUTHENTICATED', 'this sign-in link was already used or has expired; run npm start again for a new one, or paste a token');
    }
    attempt.refund();
    return signedIn(await writeSession(redemption.signIn.token, request));
  }
  const token = typeof body.token === 'string' ? body.token.trim() : '';
  if (token.length === 0 || token.length > MAX_TOKEN_LENGTH) return refuse(400, 'VALIDATION_FAILED', 'paste a token');
  const attempt = chargeSignInAttempt(clientAddress(request));
  if ('retryAfterMillis' in attempt) return rateLimited(attempt.retryAfterMillis, 'too many failed sign-ins from this address');
  const identity = await resolveIdentity(token);
  if (!identity.ok) {
    const refused = identity.status === 401 || identity.status === 403;
    // Only a refusal is a failed sign-in; an unreachable server said nothing about the token.
    if (!refused) attempt.refund();
    const message = refused ? 'the lock server does not accept this token' : identity.body.error.message;
    return Response.json({ error: { ...identity.body.error, message } }, { status: identity.status });
  }
  attempt.refund();
  return signedIn(await writeSession(token, request));
}

export async function DELETE(request: Request): Promise<Response> {
  if (!sameOrigin(request)) return refuse(403, 'FORBIDDEN', 'cross-origin sign-out refused');
  const failed = await clearSession();
  return failed ?? new Response(null, { status: 204 });
}

function signedIn(session: Awaited<ReturnType<typeof writeSession>>): Response {
  if (session instanceof Response) return session;
  return Response.json(identityOf(session), { headers: { 'cache-control': 'no-store' } });
}
