/**
 * What a scoped token (tokens file `prefixes`, issue 26) may see and touch on the HTTP surface.
 * The rule of which key is in scope is contract/policies.ts's `keyInScope`, applied here per route:
 * a key a route names outside the scope is 403 FORBIDDEN before anything is read or changed; a list
 * holds only what is in scope. An unscoped token (no prefixes) passes everything through as before.
 *
 * Lists stay correctly paged. Where one prefix covers the request it is pushed to the store's
 * `prefix` query (A1). Otherwise a page is filled from store pages asked for exactly the number of
 * items still missing, so the store's cursor always points just past the last item examined and is
 * passed back unchanged: no item is skipped or repeated. A sparse scope may answer a page shorter
 * than `limit` (after MAX_ROUNDS store pages); `nextCursor: null` stays the only end of the list.
 */
import { keyInScope } from '../../contract/policies.js';
import type { LockInfo, Page } from '../../contract/records.js';
import { normalizeKeyPrefix, PAGE_LIMIT } from '../../contract/wire-rules.js';
import type { LockService } from '../core/lock-service.js';
import { ForbiddenError } from '../errors.js';

/** Store pages one scoped list page may read before it answers what it has. */
const MAX_ROUNDS = 32;

export type Scope = readonly string[] | undefined;

/** 403 unless `key` lies in the caller's scope: nothing has been read or changed yet. */
export function assertKeyInScope(scope: Scope, key: string): void {
  if (!keyInScope(scope, key)) throw new ForbiddenError(`this token may act only on keys under ${describeScope(scope!)}`);
}

export function describeScope(scope: readonly string[]): string {
  return scope.length === 0 ? 'no prefix (its scope is empty)' : scope.map((prefix) => JSON.stringify(prefix)).join(', ');
}

/**
 * The store prefixes that together list exactly the keys under `requested` (all keys when absent)
 * that are in `scope`: each scope prefix narrowed by the request, none inside another, in key order
 * (bytewise, the store's), so listing them one after another lists keys in order.
 */
export function scopedPrefixes(scope: readonly string[], requested?: string): string[] {
  const asked = requested ? normalizeKeyPrefix(requested) : '';
  const narrowed = scope.flatMap((prefix) => (asked.startsWith(prefix) ? [asked] : prefix.startsWith(asked) ? [prefix] : []));
  const sorted = [...new Set(narrowed)].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  // A prefix inside another (kept, shorter, earlier in byte order) lists nothing more.
  return sorted.filter((prefix, i) => !sorted.slice(0, i).some((outer) => prefix.startsWith(outer)));
}

/**
 * One page of `fetch`'s list holding only what `keep` accepts, `limit` items at most, paged with
 * the underlying list's own cursor (see the file comment).
 */
export async function filteredPage<T>(
  fetch: (limit: number, cursor: string | undefined) => Promise<Page<T>>,
  keep: (item: T) => boolean,
  limit: number,
  cursor: string | undefined,
): Promise<Page<T>> {
  const items: T[] = [];
  let next: string | null | undefined = cursor;
  for (let round = 0; round < MAX_ROUNDS && items.length < limit; round += 1) {
    const page = await fetch(limit - items.length, next ?? undefined);
    items.push(...page.items.filter(keep));
    next = page.nextCursor;
    if (next === null) break;
  }
  return { items, nextCursor: next ?? null };
}

/** Every held lock under `prefixes` (every lock when absent), read page by page. */
export async function allLocks(service: LockService, prefixes?: readonly string[]): Promise<LockInfo[]> {
  const found: LockInfo[] = [];
  for (const prefix of prefixes ?? ['']) {
    let cursor: string | undefined;
    do {
      const page = await service.listLocks({ limit: PAGE_LIMIT.max, ...(prefix ? { prefix } : {}), ...(cursor ? { cursor } : {}) });
      found.push(...page.items);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  return found;
}

/** The held locks in `scope`, with the sessions holding them and how many each holds there. */
export async function locksInScope(service: LockService, scope: readonly string[]): Promise<{ locks: LockInfo[]; holders: Map<string, number> }> {
  const locks = await allLocks(service, scopedPrefixes(scope));
  const holders = new Map<string, number>();
  for (const lock of locks) if (lock.sessionId) holders.set(lock.sessionId, (holders.get(lock.sessionId) ?? 0) + 1);
  return { locks, holders };
}

/**
 * A6 by a scoped operator. A session is in the operator's scope when (1) it is live, (2) the
 * token that opened it is still in the tokens file, scoped, with every one of its prefixes inside
 * the operator's scope — so everything it can acquire is in scope (the core refuses its acquires
 * elsewhere) — and (3) every lock it holds now is in scope (a grant from before a scope change).
 * Anything else is refused (403): an unknown or ended session, one opened without a token or by an
 * unscoped or other team's token. To free one key held by such a session, A3 revokes that key.
 */
export async function assertSessionInScope(
  scope: readonly string[],
  sessionId: string,
  deps: { openerOf: (sessionId: string) => Promise<{ openedBy?: string } | null>; prefixesOf: (tokenName: string) => Scope; service: LockService },
): Promise<void> {
  const refuse = (why: string) => new ForbiddenError(`session ${sessionId} is not in this token's scope (${describeScope(scope)}): ${why}`);
  const session = await deps.openerOf(sessionId);
  if (!session) throw refuse('no live session of that id');
  if (session.openedBy === undefined) throw refuse('it was not opened with a client token');
  const openerScope = deps.prefixesOf(session.openedBy);
  if (openerScope === undefined || openerScope.length === 0 || !openerScope.every((prefix) => keyInScope(scope, prefix))) {
    throw refuse('the token that opened it may act outside this scope; revoke (A3) the key instead');
  }
  const held = (await allLocks(deps.service)).filter((lock) => lock.sessionId === sessionId);
  if (!held.every((lock) => keyInScope(scope, lock.key))) throw refuse('it holds a key outside this scope');
}
