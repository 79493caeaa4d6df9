'use client';
/**
 * Leaders: every key held as a mutex whose holder carries a value (what `session.campaign` and
 * `holdfast elect` take), with its leader, term (the leader's fencing token), value and since when.
 * Read from the admin locks list (A1) one page at a time through /api/leaders.
 */
import Link from 'next/link';
import { useQuery } from '@tanstack/react-query';
import { usePathname, useSearchParams } from 'next/navigation';
import { useEffect, useState } from 'react';
import type { LeadersPage } from '../../lib/lock-holders';
import { getJson } from '../../lib/client/api';
import { LiveControl, useLive, useNow } from '../../components/live';
import { LockValue } from '../../components/lock-value';
import { Empty, ErrorState, Loading } from '../../components/query-state';
import { TtlCountdown, When } from '../../components/ttl';

const PAGE_SIZES = [25, 50, 100, 200, 500] as const;

export function LeadersView() {
  const pathname = usePathname();
  const params = useSearchParams();
  const [prefix, setPrefix] = useState(() => params.get('prefix') ?? '');
  const [draft, setDraft] = useState(prefix);
  const [limit, setLimit] = useState(() => {
    const fromUrl = Number(params.get('limit'));
    return PAGE_SIZES.includes(fromUrl as (typeof PAGE_SIZES)[number]) ? fromUrl : 50;
  });
  // Cursors of the pages visited so far; index 0 is the first page (null cursor).
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
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
    const text = search.toString();
    window.history.replaceState(null, '', text ? `${pathname}?${text}` : pathname);
  }, [prefix, limit, pathname]);

  const query = useQuery({
    queryKey: ['leaders', prefix, limit, cursor],
    queryFn: ({ signal }) => {
      const search = new URLSearchParams({ limit: String(limit) });
      if (prefix) search.set('prefix', prefix);
      if (cursor) search.set('cursor', cursor);
      return getJson<LeadersPage>(`/api/leaders?${search}`, signal);
    },
    refetchInterval,
  });
  const rows = query.data?.items ?? [];
  const nextCursor = query.data?.nextCursor ?? null;
  const pageNumber = cursors.length;

  return (
    <>
      <div className="page-head">
        <h1>Leaders</h1>
        <LiveControl updatedAt={query.dataUpdatedAt} fetching={query.isFetching} failing={query.isError} />
      </div>
      <div className="toolbar" role="search">
        <label htmlFor="prefix">Key prefix</label>
        <input
          id="prefix"
          type="search"
          className="mono"
          value={draft}
          placeholder="e.g. election/"
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter') setPrefix(draft);
          }}
        />
        <label htmlFor="page-size">Per page</label>
        <select id="page-size" value={limit} onChange={(e) => setLimit(Number(e.target.value))}>
          {PAGE_SIZES.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </div>
      <p className="legend muted">
        Keys held as a mutex whose holder set a value (an election: <span className="mono">holdfast elect</span>, the SDK&apos;s{' '}
        <span className="mono">campaign</span>). The term is the leader&apos;s fencing token: a new leader always has a higher one.
      </p>
      {query.isError ? <ErrorState error={query.error} what="leaders" /> : null}
      {query.isPending ? <Loading what="leaders" /> : null}
      {query.data && rows.length === 0 ? (
        <Empty>
          {prefix ? (
            <>No key starting with <span className="mono">{prefix}</span> has a leader{nextCursor !== null ? ' among the locks read so far' : ''}.</>
          ) : (
            <>No key has a leader{nextCursor !== null ? ' among the locks read so far' : ' right now'}.</>
          )}
        </Empty>
      ) : null}
      {rows.length > 0 ? (
        <div className="table-wrap">
          <table className="table" data-testid="leaders-table">
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Leader</th>
                <th scope="col">Session</th>
                <th scope="col" className="num">
                  Term
                </th>
                <th scope="col">Value</th>
                <th scope="col">Leading since</th>
                <th scope="col">TTL left</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={row.key} data-testid="leader-row" data-key={row.key}>
                  <td className="mono key-cell">
                    <Link href={`/locks/${encodeURIComponent(row.key)}`}>{row.key}</Link>
                  </td>
                  <td data-testid="leader-owner">{row.leader.owner || <span className="muted">—</span>}</td>
                  <td className="mono session-cell">{row.leader.sessionId}</td>
                  <td className="mono num" data-testid="leader-term">
                    {row.term}
                  </td>
                  <td>
                    <LockValue value={row.leader.value} />
                  </td>
                  <td>
                    {/* Not coloured by age as on /locks: a leader holding for days is the normal case. */}
                    <When at={row.leader.grantedAt} now={now} />
                  </td>
                  <td>
                    <TtlCountdown expiresAt={row.leader.expiresAt} now={now} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {query.data ? (
        <nav className="pager" aria-label="Pages">
          <button type="button" className="button" disabled={pageNumber <= 1} onClick={() => setCursors((c) => c.slice(0, -1))}>
            ← Previous
          </button>
          <span data-testid="page-status">
            Page {pageNumber} · {rows.length} leader{rows.length === 1 ? '' : 's'} among {query.data.scanned} held locks read
            {nextCursor === null ? ' · last page' : ''}
          </span>
          <button type="button" className="button" disabled={nextCursor === null} onClick={() => setCursors((c) => [...c, nextCursor])}>
            Next →
          </button>
        </nav>
      ) : null}
    </>
  );
}
