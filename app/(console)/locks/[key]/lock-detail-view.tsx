'use client';
/**
 * One lock: every holder now, with its token and value (L7), who waits for it across the fleet, its
 * recent grants and ends, and every admin action ever taken on the key.
 */
import Link from 'next/link';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import type { AuditEntry, LockHolder, LockInfo, Page } from '../../../lib/api-types';
import { holdersOf, holdersOfLimit, lockKind } from '../../../lib/lock-holders';
import { getJson } from '../../../lib/client/api';
import { formatAbsolute, formatDuration } from '../../../lib/format';
import { AuditTable } from '../../../components/audit-table';
import { OperatorButton, VIEWERS_CANNOT_REVOKE } from '../../../components/operator-button';
import { LiveControl, useLive, useNow } from '../../../components/live';
import { Empty, ErrorState, Loading } from '../../../components/query-state';
import { LockValue } from '../../../components/lock-value';
import { RevokeDialog } from '../../../components/revoke-dialog';
import { TtlCountdown } from '../../../components/ttl';
import { KeyHistory } from './key-history';
import { KeyWaits } from './key-waits';

export function LockDetailView({ lockKey }: { lockKey: string }) {
  const { refetchInterval } = useLive();
  const now = useNow(500);
  const [revoking, setRevoking] = useState<LockInfo | null>(null);
  const lock = useQuery({
    queryKey: ['lock', lockKey],
    queryFn: ({ signal }) => getJson<LockInfo>(`/api/locks/${encodeURIComponent(lockKey)}`, signal),
    refetchInterval,
  });
  const audit = useQuery({
    queryKey: ['audit', { target: lockKey }],
    queryFn: ({ signal }) => getJson<Page<AuditEntry>>(`/api/audit?target=${encodeURIComponent(lockKey)}&limit=50`, signal),
    refetchInterval,
  });
  const info = lock.data;
  return (
    <>
      <p className="crumbs">
        <Link href="/locks">← Locks</Link>
      </p>
      <div className="page-head">
        <h1 className="mono break">{lockKey}</h1>
        <LiveControl updatedAt={lock.dataUpdatedAt} fetching={lock.isFetching} failing={lock.isError} />
      </div>
      {lock.isError ? <ErrorState error={lock.error} what="this lock" /> : null}
      {lock.isPending ? <Loading what="this lock" /> : null}
      {info ? (
        <section className="card" aria-label="Current holders" data-testid="lock-detail">
          {info.held ? (
            <>
              <dl className="facts">
                <dt>State</dt>
                <dd>
                  <span className="badge badge-ok">held</span>
                  {info.waiterCount > 0 ? <span className="badge badge-warn">{info.waiterCount} waiting</span> : null}
                </dd>
                <dt>Kind</dt>
                <dd data-testid="detail-kind">{lockKind(info)}</dd>
                <dt>Holders</dt>
                <dd className="mono" data-testid="detail-holders">
                  {holdersOfLimit(info)}
                </dd>
              </dl>
              <HolderTable
                holders={holdersOf(info)}
                now={now}
                onRevoke={(holder) => setRevoking({ ...info, sessionId: holder.sessionId, owner: holder.owner, fencingToken: holder.fencingToken, grantedAt: holder.grantedAt, expiresAt: holder.expiresAt })}
              />
              <p>
                <OperatorButton onClick={() => setRevoking(info)} viewerTitle={VIEWERS_CANNOT_REVOKE}>
                  Force-revoke…
                </OperatorButton>
              </p>
            </>
          ) : (
            <p data-testid="lock-free">
              <span className="badge">free</span> No session holds this key right now.
              {info.waiterCount > 0 ? ` ${info.waiterCount} waiting.` : ''}
            </p>
          )}
        </section>
      ) : null}
      <KeyWaits lockKey={lockKey} />
      <KeyHistory lockKey={lockKey} now={now} />
      <h2>Audit entries for this key</h2>
      {audit.isError ? <ErrorState error={audit.error} what="the audit entries" /> : null}
      {audit.isPending ? <Loading what="audit entries" /> : null}
      {audit.data && audit.data.items.length === 0 ? <Empty>No admin action has touched this key.</Empty> : null}
      {audit.data && audit.data.items.length > 0 ? <AuditTable items={audit.data.items} now={now} /> : null}
      {revoking ? <RevokeDialog lock={revoking} onClose={() => setRevoking(null)} /> : null}
    </>
  );
}

/**
 * Every holder, lowest token first. The page's Force-revoke names the first one (LockInfo's
 * single-holder fields), so its token keeps the page's `detail-token` mark. A key with several
 * holders (a semaphore, shared readers) also offers a revoke on each row: the stuck permit is
 * seldom the oldest, and the dialog sends that row's token, so only that grant ends.
 */
function HolderTable({ holders, now, onRevoke }: { holders: LockHolder[]; now: number; onRevoke(holder: LockHolder): void }) {
  const perHolder = holders.length > 1;
  return (
    <div className="table-wrap">
      <table className="table" data-testid="holders-table">
        <thead>
          <tr>
            <th scope="col">Session</th>
            <th scope="col">Owner</th>
            <th scope="col" className="num">
              Fencing token
            </th>
            <th scope="col">Granted</th>
            <th scope="col">Expires</th>
            <th scope="col">Value</th>
            {perHolder ? (
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>
          {holders.map((holder, i) => (
            <tr key={holder.fencingToken} data-testid="holder-row" data-token={holder.fencingToken} data-session={holder.sessionId}>
              <td className="mono session-cell">{holder.sessionId}</td>
              <td>{holder.owner || <span className="muted">—</span>}</td>
              <td className="mono num" data-testid={i === 0 ? 'detail-token' : 'holder-token'}>
                {holder.fencingToken}
              </td>
              <td>
                {holder.grantedAt ? (
                  <>
                    {formatAbsolute(holder.grantedAt)} <span className="muted">(held for {formatDuration(now - holder.grantedAt)})</span>
                  </>
                ) : (
                  '—'
                )}
              </td>
              <td>
                {holder.expiresAt ? (
                  <>
                    {formatAbsolute(holder.expiresAt)} <span className="muted">(<TtlCountdown expiresAt={holder.expiresAt} now={now} /> left unless renewed)</span>
                  </>
                ) : (
                  '—'
                )}
              </td>
              <td>
                <LockValue value={holder.value} />
              </td>
              {perHolder ? (
                <td>
                  <OperatorButton onClick={() => onRevoke(holder)} label={`Revoke token ${holder.fencingToken}`} viewerTitle={VIEWERS_CANNOT_REVOKE}>
                    Revoke…
                  </OperatorButton>
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
