/** The most contended keys (A7), for the contention page and the overview card. */
import type { NextRequest } from 'next/server';
import type { ContentionTop } from '../../lib/insight-types';
import { requireSession } from '../../lib/server/auth';
import { query } from '../../lib/server/limits';
import { callServer, relay } from '../../lib/server/upstream';

export const dynamic = 'force-dynamic';

/** A7 answers at most 100 rows. */
const MAX_CONTENTION_ROWS = 100;

export async function GET(request: NextRequest): Promise<Response> {
  const session = await requireSession();
  if (session instanceof Response) return session;
  const asked = Number(request.nextUrl.searchParams.get('limit'));
  const limit = Number.isInteger(asked) && asked >= 1 ? Math.min(asked, MAX_CONTENTION_ROWS) : 10;
  return relay(await callServer<ContentionTop>(`/v1/admin/contention${query({ limit })}`, { token: session.token }));
}
