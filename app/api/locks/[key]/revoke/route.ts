/**
 * Force-revoke (A3). The body must repeat the key (the user typed it to confirm)
 * and carry the fencing token the user saw, so a lock that changed hands
 * meanwhile comes back TOKEN_MISMATCH and nothing is revoked.
 */
import type { LockOutcome } from '../../../../lib/api-types';
import { refuse, requireOperatorAction } from '../../../../lib/server/auth';
import { callServer, relay } from '../../../../lib/server/upstream';

export const dynamic = 'force-dynamic';

export async function POST(request: Request, ctx: { params: Promise<{ key: string }> }): Promise<Response> {
  const session = await requireOperatorAction(request);
  if (session instanceof Response) return session;
  const { key } = await ctx.params;
  let body: { reason?: unknown; expectedFencingToken?: unknown; confirmKey?: unknown };
  try {
    body = (await request.json()) as typeof body;
  } catch {
    return refuse(400, 'VALIDATION_FAILED', 'body must be JSON');
  }
  const reason = typeof body.reason === 'string' ? body.reason.trim() : '';
  if (reason.length < 1 || reason.length > 500) return refuse(400, 'VALIDATION_FAILED', 'a reason of 1 to 500 characters is required');
  if (body.confirmKey !== key) return refuse(400, 'VALIDATION_FAILED', 'the typed key does not match the lock key');
  if (typeof body.expectedFencingToken !== 'string' || !/^\d+$/.test(body.expectedFencingToken)) {
    return refuse(400, 'VALIDATION_FAILED', 'the fencing token you saw is required, so a new holder is never revoked by mistake');
  }
  return relay(
    await callServer<LockOutcome>(`/v1/admin/locks/${encodeURIComponent(key)}/revoke`, {
      token: session.token,
      method: 'POST',
      body: { reason, expectedFencingToken: body.expectedFencingToken },
    }),
  );
}
