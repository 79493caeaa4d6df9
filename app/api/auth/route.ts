/** Sign in (POST a token) and sign out (DELETE). The token only ever travels browser → console once. */
import { clearSession, identityOf, refuse, sameOrigin, writeSession } from '../../lib/server/auth';
import { resolveIdentity } from '../../lib/server/identity';

export const dynamic = 'force-dynamic';

export async function POST(request: Request): Promise<Response> {
  // Origin check also stops login CSRF (a foreign page signing you in as someone else).
  if (!sameOrigin(request)) return refuse(403, 'FORBIDDEN', 'cross-origin sign-in refused');
  let token = '';
  try {
    const body = (await request.json()) as { token?: unknown };
    token = typeof body.token === 'string' ? body.token.trim() : '';
  } catch {
    return refuse(400, 'VALIDATION_FAILED', 'body must be JSON: {"token": "..."}');
  }
  if (token.length === 0 || token.length > 4096) return refuse(400, 'VALIDATION_FAILED', 'paste a token');
  const identity = await resolveIdentity(token);
  if (!identity.ok) {
    const message =
      identity.status === 401 || identity.status === 403
        ? 'the lock server does not accept this token'
        : identity.body.error.message;
    return Response.json({ error: { ...identity.body.error, message } }, { status: identity.status });
  }
  const session = { token, name: identity.body.name, role: identity.body.role };
  await writeSession(session, request);
  return Response.json(identityOf(session), { headers: { 'cache-control': 'no-store' } });
}

export async function DELETE(request: Request): Promise<Response> {
  if (!sameOrigin(request)) return refuse(403, 'FORBIDDEN', 'cross-origin sign-out refused');
  await clearSession();
  return new Response(null, { status: 204 });
}
