/** The lock policies in force (A8), for the locks page's policy filter. */
import type { LockPolicy } from '../../../contract/policies';
import { requireSession } from '../../lib/server/auth';
import { callServer, relay } from '../../lib/server/upstream';

export const dynamic = 'force-dynamic';

export async function GET(): Promise<Response> {
  const session = await requireSession();
  if (session instanceof Response) return session;
  return relay(await callServer<{ items: LockPolicy[] }>('/v1/admin/policies', { token: session.token }));
}
