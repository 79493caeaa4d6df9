/** One page of the audit trail (A4), newest first, optionally filtered by actor, action and key. */
import type { NextRequest } from 'next/server';
import type { AuditEntry, Page } from '../../lib/api-types';
import { requireSession } from '../../lib/server/auth';
import { hasFilter, matches, MAX_SCANNED_PAGES, SCAN_PAGE_SIZE, type AuditFilter } from '../../lib/server/audit-filter';
import { pageSize, query } from '../../lib/server/limits';
import { callServer, relay } from '../../lib/server/upstream';

export const dynamic = 'force-dynamic';

export async function GET(request: NextRequest): Promise<Response> {
  const session = await requireSession();
  if (session instanceof Response) return session;
  const params = request.nextUrl.searchParams;
  const limit = pageSize(params.get('limit'));
  const filter: AuditFilter = {
    actor: params.get('actor')?.trim() || undefined,
    action: params.get('action')?.trim() || undefined,
    target: params.get('target') || undefined,
  };
  const fetchPage = (cursor: string | null, size: number) =>
    callServer<Page<AuditEntry>>(`/v1/admin/audit${query({ limit: size, cursor, ...filter })}`, { token: session.token });

  if (!hasFilter(filter)) return relay(await fetchPage(params.get('cursor'), limit));

  const items: AuditEntry[] = [];
  let cursor = params.get('cursor');
  for (let scanned = 0; scanned < MAX_SCANNED_PAGES; scanned += 1) {
    const page = await fetchPage(cursor, SCAN_PAGE_SIZE);
    if (!page.ok) return relay(page);
    for (const entry of page.body.items) {
      if (!matches(entry, filter)) continue;
      items.push(entry);
    }
    cursor = page.body.nextCursor;
    // Stop at a page boundary so the cursor stays exact; a page may exceed `limit` by at most one upstream page.
    if (cursor === null || items.length >= limit) break;
  }
  const body: Page<AuditEntry> & { scannedLimitReached?: boolean } = { items, nextCursor: cursor };
  return Response.json(body, { headers: { 'cache-control': 'no-store' } });
}
