'use client';
/** One lock: who holds it now (L7), its recent grants and ends, and every admin action ever taken on the key. */
import Link from 'next/link';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import type { AuditEntry, LockInfo, Page } from '../../../lib/api-types';
import { getJson } from '../../../lib/client/api';
import { formatAbsolute, formatDuration } from '../../../lib/format';
import { AuditTable } from '../../../components/audit-table';
import { useCanAct } from '../../../components/identity';
import { LiveControl, useLive, useNow } from '../../../components/live';
import { Empty, ErrorState, Loading } from '../../../components/query-state';
import { RevokeDialog } from '../../../components/revoke-dialog';
import { TtlCountdown } from '../../../components/ttl';
import { KeyHistory } from './key-history';

export function LockDetailView({ lockKey }: { lockKey: string }) {
  const { refetchInterval } = useLive();
  const canAct = useCanAct();
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
        <section className="card" aria-label="Current holder" data-testid="lock-detail">
          {info.held ? (
            <>
              <dl className="facts">
                <dt>State</dt>
                <dd>
                  <span className="badge badge-ok">held</span>
                  {info.waiterCount > 0 ? <span className="badge badge-warn">{info.waiterCount} waiting</span> : null}
                </dd>
                <dt>Owner</dt>
                <dd>{info.owner || '—'}</dd>
                <dt>Session</dt>
                <dd className="mono">{info.sessionId}</dd>
                <dt>Fencing token</dt>
                <dd className="mono" data-testid="detail-token">
                  {info.fencingToken}
                </dd>
                <dt>Granted</dt>
                <dd>{info.grantedAt ? `${formatAbsolute(info.grantedAt)} (held for ${formatDuration(now - info.grantedAt)})` : '—'}</dd>
                <dt>Expires</dt>
                <dd>
                  {info.expiresAt ? (
                    <>
                      {formatAbsolute(info.expiresAt)} (<TtlCountdown expiresAt={info.expiresAt} now={now} /> left unless renewed)
                    </>
                  ) : (
                    '—'
                  )}
                </dd>
              </dl>
              <button
                type="button"
                className="button danger-outline"
                disabled={!canAct}
                onClick={() => setRevoking(info)}
                title={canAct ? undefined : 'Viewers cannot revoke; sign in with an operator token'}
              >
                Force-revoke…
              </button>
            </>
          ) : (
            <p data-testid="lock-free">
              <span className="badge">free</span> No session holds this key right now.
              {info.waiterCount > 0 ? ` ${info.waiterCount} waiting.` : ''}
            </p>
          )}
        </section>
      ) : null}
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
