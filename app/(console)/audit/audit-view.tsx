'use client';
/** The audit trail: newest first, filter by actor, action and key, with the hash chain's verification state. */
import { useQuery } from '@tanstack/react-query';
import { usePathname, useRouter, useSearchParams } from 'next/navigation';
import { useEffect, useState, type FormEvent } from 'react';
import type { AuditEntry, AuditVerification, Page } from '../../lib/api-types';
import { getJson } from '../../lib/client/api';
import { AuditTable } from '../../components/audit-table';
import { LiveControl, useLive, useNow } from '../../components/live';
import { Empty, ErrorState, Loading } from '../../components/query-state';

const PAGE_SIZE = 50;
const ACTIONS = ['lock.revoke', 'session.kill', 'audit.prune', 'tokens.advance'] as const;

export function AuditView() {
  const router = useRouter();
  const pathname = usePathname();
  const params = useSearchParams();
  const filter = { actor: params.get('actor') ?? '', action: params.get('action') ?? '', target: params.get('target') ?? '' };
  const highlight = params.get('highlight');
  const [draft, setDraft] = useState(filter);
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const { refetchInterval } = useLive();
  const now = useNow();
  const cursor = cursors[cursors.length - 1] ?? null;
  const filterKey = `${filter.actor}\u0000${filter.action}\u0000${filter.target}`;
  useEffect(() => {
    setCursors([null]);
    setDraft({ actor: params.get('actor') ?? '', action: params.get('action') ?? '', target: params.get('target') ?? '' });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [filterKey]);

  const entries = useQuery({
    queryKey: ['audit', filter, cursor],
    queryFn: ({ signal }) => {
      const search = new URLSearchParams({ limit: String(PAGE_SIZE) });
      for (const [k, v] of Object.entries(filter)) if (v) search.set(k, v);
      if (cursor) search.set('cursor', cursor);
      return getJson<Page<AuditEntry>>(`/api/audit?${search}`, signal);
    },
    refetchInterval,
  });
  const verify = useQuery({
    queryKey: ['audit-verify'],
    queryFn: ({ signal }) => getJson<AuditVerification>('/api/audit/verify', signal),
    refetchInterval: refetchInterval === false ? false : 15_000,
  });

  function apply(event: FormEvent) {
    event.preventDefault();
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(draft)) if (v.trim()) search.set(k, k === 'target' ? v : v.trim());
    const text = search.toString();
    router.replace(text ? `${pathname}?${text}` : pathname);
  }

  const items = entries.data?.items ?? [];
  const nextCursor = entries.data?.nextCursor ?? null;
  const filtered = Boolean(filter.actor || filter.action || filter.target);
  return (
    <>
      <div className="page-head">
        <h1>Audit trail</h1>
        <LiveControl updatedAt={entries.dataUpdatedAt} fetching={entries.isFetching} failing={entries.isError} />
      </div>
      <ChainState verify={verify.data} error={verify.error} pending={verify.isPending} />
      <form className="toolbar" onSubmit={apply} role="search" aria-label="Filter the audit trail">
        <label htmlFor="f-actor">Actor</label>
        <input id="f-actor" value={draft.actor} onChange={(e) => setDraft({ ...draft, actor: e.target.value })} placeholder="token name" />
        <label htmlFor="f-action">Action</label>
        <select id="f-action" value={draft.action} onChange={(e) => setDraft({ ...draft, action: e.target.value })}>
          <option value="">any</option>
          {ACTIONS.map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
        </select>
        <label htmlFor="f-target">Key or session</label>
        <input id="f-target" className="mono" value={draft.target} onChange={(e) => setDraft({ ...draft, target: e.target.value })} placeholder="exact key or session id" />
        <button type="submit" className="button">
          Apply
        </button>
        {filtered ? (
          <button type="button" className="button" onClick={() => router.replace(pathname)}>
            Clear
          </button>
        ) : null}
      </form>
      {entries.isError ? <ErrorState error={entries.error} what="the audit trail" /> : null}
      {entries.isPending ? <Loading what="the audit trail" /> : null}
      {entries.data && items.length === 0 ? <Empty>{filtered ? 'No audit entry matches these filters.' : 'No admin action has been taken yet.'}</Empty> : null}
      {items.length > 0 ? <AuditTable items={items} now={now} highlight={highlight} /> : null}
      {entries.data ? (
        <nav className="pager" aria-label="Pages">
          <button type="button" className="button" disabled={cursors.length <= 1} onClick={() => setCursors((c) => c.slice(0, -1))}>
            ← Newer
          </button>
          <span>
            Page {cursors.length}
            {nextCursor === null ? ' · no older entries' : ''}
          </span>
          <button type="button" className="button" disabled={nextCursor === null} onClick={() => setCursors((c) => [...c, nextCursor])}>
            Older →
          </button>
        </nav>
      ) : null}
    </>
  );
}

function ChainState({ verify, error, pending }: { verify?: AuditVerification; error: unknown; pending: boolean }) {
  if (pending) return <div className="banner">Verifying the audit chain…</div>;
  if (!verify) {
    return (
      <div className="banner banner-warn" data-testid="chain-state" data-state="unknown">
        Audit chain: could not check ({error instanceof Error ? error.message : 'no answer'}).
      </div>
    );
  }
  if (verify.state === 'verified') {
    return (
      <div className="banner banner-ok" data-testid="chain-state" data-state="verified">
        <strong>Chain verified</strong>: all {verify.entries} {verify.entries === 1 ? 'entry links and hashes' : 'entries link and hash'} correctly; none was altered, inserted or removed.
      </div>
    );
  }
  if (verify.state === 'broken') {
    return (
      <div className="banner banner-error" role="alert" data-testid="chain-state" data-state="broken">
        <strong>Chain broken at entry {verify.brokenAt}</strong> (entry #{verify.entries} in chain order): {verify.problem}. Entries from there on cannot be trusted.
      </div>
    );
  }
  return (
    <div className="banner banner-warn" data-testid="chain-state" data-state="unavailable">
      Audit chain not verified: {verify.message}.
    </div>
  );
}
