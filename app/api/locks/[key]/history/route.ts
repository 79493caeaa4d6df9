/** One key's recent grants, releases, expiries and revokes, plus its audit entries, for the lock detail page. */
import type { LockHistory } from '../../../../lib/insight-types';
import { requireSession } from '../../../../lib/server/auth';
import { callServer, relay } from '../../../../lib/server/upstream';

export const dynamic = 'force-dynamic';

export async function GET(_request: Request, ctx: { params: Promise<{ key: string }> }): Promise<Response> {
  const session = await requireSession();
  if (session instanceof Response) return session;
  const { key } = await ctx.params;
  return relay(await callServer<LockHistory>(`/v1/admin/locks/${encodeURIComponent(key)}/history?limit=100`, { token: session.token }));
}
