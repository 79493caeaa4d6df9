/** One page of live sessions (A2). */
import type { NextRequest } from 'next/server';
import type { Page, SessionInfo } from '../../lib/api-types';
import { requireSession } from '../../lib/server/auth';
import { pageSize, query } from '../../lib/server/limits';
import { callServer, relay } from '../../lib/server/upstream';

export const dynamic = 'force-dynamic';

export async function GET(request: NextRequest): Promise<Response> {
  const session = await requireSession();
  if (session instanceof Response) return session;
  const params = request.nextUrl.searchParams;
  const path = `/v1/admin/sessions${query({ limit: pageSize(params.get('limit')), cursor: params.get('cursor') })}`;
  return relay(await callServer<Page<SessionInfo>>(path, { token: session.token }));
}
