/**
 * Mint a one-time sign-in code: `POST /api/auth/codes` with
 * `Authorization: Bearer <admin token>` → 201 `{code, expiresAt, path}`, where
 * `path` (`/signin?code=…`) is the link to open. Only someone who holds a token
 * the lock server accepts can mint one, and it signs in as that token — this is
 * how `npm start` prints a sign-in link without putting the operator token in a
 * URL: it reads the local token file and asks here (scripts/signin-link.sh).
 *
 * The lock server keeps the code (K1: it checks the token, keeps at most 8 pending
 * codes per token) so any console replica redeems it. A bearer token the lock
 * server refuses is a failed sign-in of the sending address, like a wrong pasted
 * token (signin-limits.ts).
 */
import { refuse } from '../../../lib/server/auth';
import { mintSignInCode } from '../../../lib/server/signin-codes';
import { chargeSignInAttempt, clientAddress, rateLimited } from '../../../lib/server/signin-limits';

export const dynamic = 'force-dynamic';

export async function POST(request: Request): Promise<Response> {
  const header = request.headers.get('authorization') ?? '';
  const match = /^Bearer ([^\s]{1,4096})$/.exec(header.trim());
  if (!match) return refuse(401, 'UNAUTHENTICATED', 'send the admin token as Authorization: Bearer <token>');
  const token = match[1]!;
  const attempt = chargeSignInAttempt(clientAddress(request));
  if ('retryAfterMillis' in attempt) return rateLimited(attempt.retryAfterMillis, 'too many failed sign-ins from this address');
  const minted = await mintSignInCode(token);
  if (!minted.ok) {
    const refused = minted.status === 401 || minted.status === 403;
    if (!refused) attempt.refund();
    const message = refused ? 'the lock server does not accept this token' : minted.body.error.message;
    return Response.json({ error: { ...minted.body.error, message } }, { status: minted.status, headers: { 'cache-control': 'no-store' } });
  }
  attempt.refund();
  const { code, expiresAt } = minted.body;
  return Response.json({ code, expiresAt, path: `/signin?code=${code}` }, { status: 201, headers: { 'cache-control': 'no-store' } });
}
