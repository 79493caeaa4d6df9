/** Who is signed in, and the CSRF token their admin actions must carry. */
import { identityOf, requireSession } from '../../lib/server/auth';

export const dynamic = 'force-dynamic';

export async function GET(): Promise<Response> {
  const session = await requireSession();
  if (session instanceof Response) return session;
  return Response.json(identityOf(session), { headers: { 'cache-control': 'no-store' } });
}
