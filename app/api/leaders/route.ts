/**
 * One page of leaderships (keys whose mutex holder carries a value), read from A1 with the
 * signed-in token: the same access as the locks page (a scoped token sees its keys only).
 */
import type { NextRequest } from 'next/server';
import type { LockInfo, Page } from '../../lib/api-types';
import { requireSession } from '../../lib/server/auth';
import { leadersPage } from '../../lib/server/leaders-page';
import { pageSize, query } from '../../lib/server/limits';
import { callServer, relay, type UpstreamResult } from '../../lib/server/upstream';

export const dynamic = 'force-dynamic';

/** An A1 call that failed: its answer is passed through as the route's. */
class UpstreamFailure extends Error {
  constructor(readonly result: UpstreamResult<never>) {
    super('A1 failed');
  }
}

export async function GET(request: NextRequest): Promise<Response> {
  const session = await requireSession();
  if (session instanceof Response) return session;
  const params = request.nextUrl.searchParams;
  const prefix = params.get('prefix');
  const read = async (limit: number, cursor: string | undefined): Promise<Page<LockInfo>> => {
    const result = await callServer<Page<LockInfo>>(`/v1/admin/locks${query({ prefix, limit, cursor })}`, { token: session.token });
    if (!result.ok) throw new UpstreamFailure(result);
    return result.body;
  };
  try {
    const page = await leadersPage(read, pageSize(params.get('limit')), params.get('cursor') ?? undefined);
    return relay({ ok: true, status: 200, body: page });
  } catch (error) {
    if (error instanceof UpstreamFailure) return relay(error.result);
    throw error;
  }
}
