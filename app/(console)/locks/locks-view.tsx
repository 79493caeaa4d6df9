'use client';
/**
 * Held locks, one server page at a time (A1 cursor pagination: the console never
 * fetches every lock). Locks with waiters or held unusually long stand out.
 */
import Link from 'next/link';
import { useQuery } from '@tanstack/react-query';
import { usePathname, useSearchParams } from 'next/navigation';
import { useEffect, useMemo, useState } from 'react';
import type { LockPolicy } from '../../../contract/policies';
import type { LockInfo, Page } from '../../lib/api-types';
import { holdersOfLimit, lockKind } from '../../lib/lock-holders';
import { NO_POLICY, serverPrefix, underPolicy, type PolicyChoice } from '../../lib/policy-filter';
import { getJson } from '../../lib/client/api';
import { OperatorButton, VIEWERS_CANNOT_REVOKE } from '../../components/operator-button';
import { LiveControl, useLive, useNow } from '../../components/live';
import { Empty, ErrorState, Loading } from '../../components/query-state';
import { RevokeDialog } from '../../components/revoke-dialog';
import { TtlCountdown, When } from '../../components/ttl';
import { AGE_BAD_MILLIS, AGE_WARN_MILLIS, LockAge } from '../../components/lock-age';

/** A lock held longer than this is flagged: most payout-style critical sections take seconds. */
export const LONG_HELD_MILLIS = AGE_BAD_MILLIS;
const PAGE_SIZES = [25, 50, 100, 200, 500] as const;
type SortKey = 'key' | 'age' | 'ttl' | 'waiters' | 'token';

export function LocksView() {
  const pathname = usePathname();
  const params = useSearchParams();
  // The search and page size live in state (the source of truth) and are mirrored to the address bar
  // so the view can be shared; reading them back from the URL would race with pending navigations.
  const [prefix, setPrefix] = useState(() => params.get('prefix') ?? '');
  const [limit, setLimit] = useState(() => {
    const fromUrl = Number(params.get('limit'));
    return PAGE_SIZES.includes(fromUrl as (typeof PAGE_SIZES)[number]) ? fromUrl : 50;
  });
  const [draft, setDraft] = useState(prefix);
  // The lock policy filter (null: all locks); `policy=` in the address bar is "no policy".
  const [policy, setPolicy] = useState<PolicyChoice>(() => params.get('policy'));
  // Cursors of the pages visited so far; index 0 is the first page (null cursor).
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [sort, setSort] = useState<SortKey>(() => (params.get('sort') === 'age' ? 'age' : 'key'));
  // "Held longest" asks the server for the oldest grants of all locks (A1 sort=age), not this page's.
  const serverAge = sort === 'age';
  const [revoking, setRevoking] = useState<LockInfo | null>(null);
  const { refetchInterval } = useLive();
  const now = useNow(500);
  const cursor = cursors[cursors.length - 1] ?? null;

  // Typing narrows the search after a short pause, so each keystroke is not a request.
  useEffect(() => {
    if (draft === prefix) return;
    const timer = setTimeout(() => setPrefix(draft), 300);
    return () => clearTimeout(timer);
  }, [draft, prefix]);
  useEffect(() => {
    setCursors([null]);
    const search = new URLSearchParams();
    if (prefix) search.set('prefix', prefix);
    if (limit !== 50) search.set('limit', String(limit));
    if (serverAge) search.set('sort', 'age');
    if (policy !== null) search.set('policy', policy);
    const text = search.toString();
    // Native replaceState (Next.js syncs it with useSearchParams): no server round trip, no remount.
    window.history.replaceState(null, '', text ? `${pathname}?${text}` : pathname);
  }, [prefix, limit, pathname, serverAge, policy]);

  // The policies change only when the server's file does: read once a minute.
  const policiesQuery = useQuery({
    queryKey: ['policies'],
    queryFn: ({ signal }) => getJson<{ items: LockPolicy[] }>('/api/policies', signal),
    staleTime: 60_000,
    refetchInterval: 60_000,
  });
  const policies = useMemo(() => policiesQuery.data?.items ?? [], [policiesQuery.data]);
  const asked = serverPrefix(prefix, policy, policies);

  const query = useQuery({
    queryKey: ['locks', asked ?? null, limit, serverAge ? 'age' : cursor],
    // A typed prefix outside the chosen policy's: nothing can match, nothing to ask.
    enabled: asked !== undefined,
    queryFn: ({ signal }) => {
      const search = new URLSearchParams({ limit: String(limit) });
      if (asked) search.set('prefix', asked);
      if (serverAge) search.set('sort', 'age');
      else if (cursor) search.set('cursor', cursor);
      return getJson<Page<LockInfo>>(`/api/locks?${search}`, signal);
    },
    refetchInterval,
  });

  const rows = useMemo(
    () => sortRows(underPolicy(asked === undefined ? [] : (query.data?.items ?? []), policy, policies), sort, now),
    [query.data, sort, now, policy, policies, asked],
  );
  const pageNumber = cursors.length;
  const nextCursor = query.data?.nextCursor ?? null;
  const firstIndex = (pageNumber - 1) * limit + 1;

  return (
    <>
      <div className="page-head">
        <h1>Locks</h1>
        <LiveControl updatedAt={query.dataUpdatedAt} fetching={query.isFetching} failing={query.isError} />
      </div>
      <div className="toolbar" role="search">
        <label htmlFor="prefix">Key prefix</label>
        <input
          id="prefix"
          type="search"
          className="mono"
          value={draft}
          placeholder="e.g. payouts/"
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter') setPrefix(draft);
          }}
          data-testid="prefix-input"
        />
        <label htmlFor="page-size">Per page</label>
        <select id="page-size" value={limit} onChange={(e) => setLimit(Number(e.target.value))} data-testid="page-size">
          {PAGE_SIZES.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
        <label htmlFor="sort">Sort by</label>
        <select id="sort" value={sort} onChange={(e) => setSort(e.target.value as SortKey)}>
          <option value="key">key</option>
          <option value="age">held longest (all locks)</option>
          <option value="ttl">expiring soonest (this page)</option>
          <option value="waiters">most waiters (this page)</option>
          <option value="token">newest token (this page)</option>
        </select>
        {policies.length > 0 || policy !== null ? (
          <>
            <label htmlFor="policy">Policy</label>
            <select
              id="policy"
              value={policy ?? '*'}
              onChange={(e) => setPolicy(e.target.value === '*' ? null : e.target.value)}
              data-testid="policy-filter"
            >
              <option value="*">all locks</option>
              {policies.map((p) => (
                <option key={p.name} value={p.name}>
                  {p.name} ({p.prefix}…)
                </option>
              ))}
              <option value={NO_POLICY}>no policy (this page)</option>
            </select>
          </>
        ) : null}
      </div>
      <p className="legend muted">
        <span className="badge badge-warn">waiters</span> someone is queued for the lock ·{' '}
        <span className="badge badge-bad">long-held</span> held over {LONG_HELD_MILLIS / 60_000} min ·{' '}
        <span className="age age-warn">age</span> over {AGE_WARN_MILLIS / 60_000} min · TTL counts down live ·
        Holders is holders/limit; owner, session, token and times are the first holder&apos;s (lowest token)
      </p>
      {query.isError ? <ErrorState error={query.error} what="locks" /> : null}
      {query.isPending && asked !== undefined ? <Loading what="locks" /> : null}
      {(query.data || asked === undefined) && rows.length === 0 ? (
        <Empty>
          {policy !== null ? (
            <>No held lock {policy === NO_POLICY ? 'under no policy' : <>under policy <span className="mono">{policy}</span></>}{prefix ? <> with a key starting with <span className="mono">{prefix}</span></> : null}{nextCursor !== null && asked !== undefined ? ' on this page' : ''}.</>
          ) : prefix ? (
            <>No held lock has a key starting with <span className="mono">{prefix}</span>.</>
          ) : (
            'No lock is held right now.'
          )}
        </Empty>
      ) : null}
      {rows.length > 0 ? (
        <div className="table-wrap">
          <table className="table" data-testid="locks-table">
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Kind</th>
                <th scope="col" className="num" title="holders / limit">
                  Holders
                </th>
                <th scope="col">Owner</th>
                <th scope="col">Session</th>
                <th scope="col" className="num">
                  Fencing token
                </th>
                <th scope="col">Held for</th>
                <th scope="col">TTL left</th>
                <th scope="col" className="num">
                  Waiters
                </th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((lock) => (
                <LockRow key={lock.key} lock={lock} now={now} onRevoke={() => setRevoking(lock)} />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {query.data && serverAge ? (
        <p className="muted" data-testid="page-status">
          The {rows.length} oldest grants{prefix ? ' with this prefix' : ''}, oldest first.
        </p>
      ) : null}
      {query.data && !serverAge ? (
        <nav className="pager" aria-label="Pages">
          <button type="button" className="button" disabled={pageNumber <= 1} onClick={() => setCursors((c) => c.slice(0, -1))}>
            ← Previous
          </button>
          <span data-testid="page-status">
            Page {pageNumber}
            {rows.length > 0 ? ` · locks ${firstIndex}–${firstIndex + rows.length - 1}` : ''}
            {nextCursor === null ? ' · last page' : ''}
          </span>
          <button type="button" className="button" disabled={nextCursor === null} onClick={() => setCursors((c) => [...c, nextCursor])} data-testid="next-page">
            Next →
          </button>
        </nav>
      ) : null}
      {revoking ? <RevokeDialog lock={revoking} onClose={() => setRevoking(null)} /> : null}
    </>
  );
}

/** One held lock; its owner, session, token and times are the lowest-token holder's (LockInfo's single-holder fields). */
function LockRow({ lock, now, onRevoke }: { lock: LockInfo; now: number; onRevoke(): void }) {
  const age = lock.grantedAt ? now - lock.grantedAt : 0;
  const longHeld = age > LONG_HELD_MILLIS;
  const classes = [lock.waiterCount > 0 ? 'row-waiters' : '', longHeld ? 'row-long' : ''].filter(Boolean).join(' ');
  return (
    <tr className={classes} data-testid="lock-row" data-key={lock.key}>
      <td className="mono key-cell">
        <Link href={`/locks/${encodeURIComponent(lock.key)}`}>{lock.key}</Link>
        {longHeld ? <span className="badge badge-bad">long-held</span> : null}
      </td>
      <td className="kind" data-testid="lock-kind">
        {lockKind(lock)}
      </td>
      <td className="mono num" data-testid="lock-holders">
        {holdersOfLimit(lock)}
      </td>
      <td>{lock.owner || <span className="muted">—</span>}</td>
      <td className="mono session-cell">{lock.sessionId ?? '—'}</td>
      <td className="mono num" data-testid="lock-token">
        {lock.fencingToken}
      </td>
      <td>{lock.grantedAt ? <LockAge grantedAt={lock.grantedAt} now={now} /> : '—'}</td>
      <td>
        <TtlCountdown expiresAt={lock.expiresAt} now={now} />
      </td>
      <td className="num">{lock.waiterCount > 0 ? <span className="badge badge-warn">{lock.waiterCount} waiting</span> : <span className="muted">0</span>}</td>
      <td>
        <OperatorButton small onClick={onRevoke} label={`Revoke ${lock.key}`} title={`Force-revoke ${lock.key}`} viewerTitle={VIEWERS_CANNOT_REVOKE}>
          Revoke…
        </OperatorButton>
      </td>
    </tr>
  );
}

function sortRows(items: LockInfo[], sort: SortKey, now: number): LockInfo[] {
  const rows = [...items];
  const by = (f: (l: LockInfo) => number) => rows.sort((a, b) => f(b) - f(a));
  if (sort === 'age') by((l) => (l.grantedAt ? now - l.grantedAt : 0));
  else if (sort === 'ttl') rows.sort((a, b) => (a.expiresAt ?? Infinity) - (b.expiresAt ?? Infinity));
  else if (sort === 'waiters') by((l) => l.waiterCount);
  else if (sort === 'token') rows.sort((a, b) => (BigInt(b.fencingToken ?? '0') > BigInt(a.fencingToken ?? '0') ? 1 : -1));
  return rows;
}
