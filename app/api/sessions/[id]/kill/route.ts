/** Kill a session (A6): same safety as force-revoke (operator, same origin, CSRF token, typed confirmation). */
import { refuse, requireOperatorAction } from '../../../../lib/server/auth';
import { callServer, relay } from '../../../../lib/server/upstream';

export const dynamic = 'force-dynamic';

export async function POST(request: Request, ctx: { params: Promise<{ id: string }> }): Promise<Response> {
  const session = await requireOperatorAction(request);
  if (session instanceof Response) return session;
  const { id } = await ctx.params;
  let body: { reason?: unknown; confirmId?: unknown };
  try {
    body = (await request.json()) as typeof body;
  } catch {
    return refuse(400, 'VALIDATION_FAILED', 'body must be JSON');
  }
  const reason = typeof body.reason === 'string' ? body.reason.trim() : '';
  if (reason.length < 1 || reason.length > 500) return refuse(400, 'VALIDATION_FAILED', 'a reason of 1 to 500 characters is required');
  if (body.confirmId !== id) return refuse(400, 'VALIDATION_FAILED', 'the typed session id does not match');
  return relay(
    await callServer<unknown>(`/v1/admin/sessions/${encodeURIComponent(id)}/kill`, {
      token: session.token,
      method: 'POST',
      body: { reason },
    }),
  );
}
