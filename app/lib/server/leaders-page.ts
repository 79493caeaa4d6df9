/**
 * One page of leaderships (lock-holders.ts `leadershipOf`) read from A1, the admin locks list: A1
 * has no "has a value" filter, so the console reads its pages and keeps the leaderships.
 *
 * Paging stays exact on A1's own cursor, as the server pages a scoped list (lock/http/key-scope.ts):
 * A1 is read a whole page (`SCAN_PAGE` locks) at a time, so a few leaders among many locks are
 * found in few calls; when a page holds more leaderships than the answer still needs, that page is
 * read again only up to the last one needed, so A1's cursor points just past it and the next page
 * starts at the first leadership not shown. A sparse list may answer fewer than `limit` after
 * `MAX_ROUNDS` A1 pages; `nextCursor: null` stays the only end of the list.
 */
import type { LockInfo, Page } from '../api-types';
import { leadershipOf, type Leadership, type LeadersPage } from '../lock-holders';
import { MAX_PAGE_SIZE } from './limits';

/** Locks asked of A1 per round: the largest page the console ever asks for. */
export const SCAN_PAGE = MAX_PAGE_SIZE;
/** A1 pages one leaders page may read before it answers what it has. */
export const MAX_ROUNDS = 8;

export type ReadLocks = (limit: number, cursor: string | undefined) => Promise<Page<LockInfo>>;

export async function leadersPage(read: ReadLocks, limit: number, cursor: string | undefined): Promise<LeadersPage> {
  const items: Leadership[] = [];
  let next: string | null | undefined = cursor;
  let scanned = 0;
  for (let round = 0; round < MAX_ROUNDS && items.length < limit; round += 1) {
    const from = next ?? undefined;
    let page = await read(SCAN_PAGE, from);
    const needed = limit - items.length;
    const found = leadershipsIn(page.items);
    if (found.length > needed) {
      // Read this page again up to the last leadership needed, for a cursor just past it.
      page = await read(found[needed - 1]!.index + 1, from);
    }
    scanned += page.items.length;
    items.push(...leadershipsIn(page.items).slice(0, needed).map((f) => f.leadership));
    next = page.nextCursor;
    if (next === null) break;
  }
  return { items, nextCursor: next ?? null, scanned };
}

function leadershipsIn(locks: LockInfo[]): { leadership: Leadership; index: number }[] {
  return locks.flatMap((lock, index) => {
    const leadership = leadershipOf(lock);
    return leadership ? [{ leadership, index }] : [];
  });
}
