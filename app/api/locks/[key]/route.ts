/** One lock's state (L7), for the lock detail page and the revoke dialog. */
import type { LockInfo } from '../../../lib/api-types';
import { requireSession } from '../../../lib/server/auth';
import { callServer, relay } from '../../../lib/server/upstream';

export const dynamic = 'force-dynamic';

export async function GET(_request: Request, ctx: { params: Promise<{ key: string }> }): Promise<Response> {
  const session = await requireSession();
  if (session instanceof Response) return session;
  const { key } = await ctx.params;
  return relay(await callServer<LockInfo>(`/v1/locks/${encodeURIComponent(key)}`, { token: session.token }));
}
