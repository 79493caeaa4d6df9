/** One page of held locks (A1): server-side cursor pagination, prefix search, or the oldest grants (sort=age). */
import type { NextRequest } from 'next/server';
import type { LockInfo, Page } from '../../lib/api-types';
import { requireSession } from '../../lib/server/auth';
import { pageSize, query } from '../../lib/server/limits';
import { callServer, relay } from '../../lib/server/upstream';

export const dynamic = 'force-dynamic';

export async function GET(request: NextRequest): Promise<Response> {
  const session = await requireSession();
  if (session instanceof Response) return session;
  const params = request.nextUrl.searchParams;
  const path = `/v1/admin/locks${query({
    prefix: params.get('prefix'),
    limit: pageSize(params.get('limit')),
    cursor: params.get('cursor'),
    // Only the one other order A1 knows is passed on; anything else is the default (by key).
    sort: params.get('sort') === 'age' ? 'age' : undefined,
  })}`;
  return relay(await callServer<Page<LockInfo>>(path, { token: session.token }));
}
