/** The wait-for graph (who waits for which key, held by whom, and cycles), for the waits page. */
import type { WaitGraph } from '../../lib/insight-types';
import { requireSession } from '../../lib/server/auth';
import { callServer, relay } from '../../lib/server/upstream';

export const dynamic = 'force-dynamic';

export async function GET(): Promise<Response> {
  const session = await requireSession();
  if (session instanceof Response) return session;
  return relay(await callServer<WaitGraph>('/v1/admin/waits', { token: session.token }));
}
