'use client';
/** Live sessions (A2): owner, TTL, last heartbeat, locks held; kill. */
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import type { Page, SessionInfo } from '../../lib/api-types';
import { getJson } from '../../lib/client/api';
import { formatDuration } from '../../lib/format';
import { OperatorButton } from '../../components/operator-button';
import { KillDialog } from '../../components/kill-dialog';
import { LiveControl, useLive, useNow } from '../../components/live';
import { Empty, ErrorState, Loading } from '../../components/query-state';
import { TtlCountdown, When } from '../../components/ttl';

const PAGE_SIZE = 50;

export function SessionsView() {
  const { refetchInterval } = useLive();
  const now = useNow(500);
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [killing, setKilling] = useState<SessionInfo | null>(null);
  const cursor = cursors[cursors.length - 1] ?? null;
  const query = useQuery({
    queryKey: ['sessions', cursor],
    queryFn: ({ signal }) => getJson<Page<SessionInfo>>(`/api/sessions?limit=${PAGE_SIZE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, signal),
    refetchInterval,
  });
  const items = query.data?.items ?? [];
  const nextCursor = query.data?.nextCursor ?? null;
  return (
    <>
      <div className="page-head">
        <h1>Sessions</h1>
        <LiveControl updatedAt={query.dataUpdatedAt} fetching={query.isFetching} failing={query.isError} />
      </div>
      <p className="legend muted">A session that misses heartbeats for its whole TTL expires and loses every lock. Heartbeat age is highlighted once it passes half the TTL.</p>
      {query.isError ? <ErrorState error={query.error} what="sessions" /> : null}
      {query.isPending ? <Loading what="sessions" /> : null}
      {query.data && items.length === 0 ? <Empty>No live session.</Empty> : null}
      {items.length > 0 ? (
        <div className="table-wrap">
          <table className="table" data-testid="sessions-table">
            <thead>
              <tr>
                <th scope="col">Owner</th>
                <th scope="col">Session</th>
                <th scope="col">TTL</th>
                <th scope="col">Last heartbeat</th>
                <th scope="col">Expires in</th>
                <th scope="col" className="num">
                  Locks
                </th>
                <th scope="col">Opened</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {items.map((s) => {
                const silent = now - s.lastHeartbeatAt > s.ttlMillis / 2;
                return (
                  <tr key={s.sessionId} className={silent ? 'row-waiters' : undefined} data-testid="session-row" data-session={s.sessionId}>
                    <td>{s.owner || <span className="muted">—</span>}</td>
                    <td className="mono">{s.sessionId}</td>
                    <td>{formatDuration(s.ttlMillis)}</td>
                    <td>
                      <When at={s.lastHeartbeatAt} now={now} />
                      {silent ? <span className="badge badge-warn">quiet</span> : null}
                    </td>
                    <td>
                      <TtlCountdown expiresAt={s.expiresAt} now={now} />
                    </td>
                    <td className="num">{s.lockCount}</td>
                    <td>
                      <When at={s.createdAt} now={now} />
                    </td>
                    <td>
                      <OperatorButton
                        small
                        onClick={() => setKilling(s)}
                        label={`Kill session ${s.sessionId}`}
                        title={`Kill session ${s.sessionId}`}
                        viewerTitle="Viewers cannot kill sessions; sign in with an operator token"
                      >
                        Kill…
                      </OperatorButton>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ) : null}
      {query.data ? (
        <nav className="pager" aria-label="Pages">
          <button type="button" className="button" disabled={cursors.length <= 1} onClick={() => setCursors((c) => c.slice(0, -1))}>
            ← Previous
          </button>
          <span>
            Page {cursors.length}
            {nextCursor === null ? ' · last page' : ''}
          </span>
          <button type="button" className="button" disabled={nextCursor === null} onClick={() => setCursors((c) => [...c, nextCursor])}>
            Next →
          </button>
        </nav>
      ) : null}
      {killing ? <KillDialog session={killing} onClose={() => setKilling(null)} /> : null}
    </>
  );
}
