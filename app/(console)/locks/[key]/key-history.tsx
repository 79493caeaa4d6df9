'use client';
/**
 * One key's recent story: grants, releases, expiries, revokes and session ends
 * with their fencing tokens and who, newest first. Recent events are what the
 * answering server instance saw (a bounded ring); revokes and kills are also in
 * the audit trail below, which is store-wide and permanent.
 */
import { useLockHistory } from '../../../components/insight-queries';
import { Empty, ErrorState, Loading } from '../../../components/query-state';
import { formatAbsolute, formatDuration, formatRelative } from '../../../lib/format';
import type { LockHistoryEvent } from '../../../lib/insight-types';

const KIND_LABEL: Record<LockHistoryEvent['kind'], string> = {
  granted: 'granted',
  released: 'released',
  expired: 'expired (TTL)',
  revoked: 'force-revoked',
  session_ended: 'session ended',
};

const KIND_TONE: Record<LockHistoryEvent['kind'], string> = {
  granted: 'badge-ok',
  released: '',
  expired: 'badge-warn',
  revoked: 'badge-bad',
  session_ended: 'badge-warn',
};

export function KeyHistory({ lockKey, now }: { lockKey: string; now: number }) {
  const history = useLockHistory(lockKey);
  const items = history.data?.items;
  return (
    <>
      <h2>Recent history of this key</h2>
      {history.isError ? <ErrorState error={history.error} what="the history" /> : null}
      {history.isPending ? <Loading what="the history" /> : null}
      {items && items.length === 0 ? <Empty>This server has seen no grant or release of this key recently.</Empty> : null}
      {items && items.length > 0 ? (
        <div className="table-wrap">
          <table className="table" data-testid="history-table">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Event</th>
                <th scope="col" className="num">
                  Fencing token
                </th>
                <th scope="col">Session</th>
                <th scope="col">Owner</th>
                <th scope="col">Held for</th>
                <th scope="col">By / why</th>
              </tr>
            </thead>
            <tbody>
              {items.map((event, i) => (
                <tr key={`${event.at}-${event.kind}-${event.fencingToken}-${i}`} data-testid="history-row" data-kind={event.kind}>
                  <td title={formatAbsolute(event.at)}>{formatRelative(event.at, now)}</td>
                  <td>
                    <span className={`badge ${KIND_TONE[event.kind]}`}>{KIND_LABEL[event.kind]}</span>
                  </td>
                  <td className="mono num" data-testid="history-token">
                    {event.fencingToken}
                  </td>
                  <td className="mono session-cell">{event.sessionId}</td>
                  <td>{event.owner || <span className="muted">—</span>}</td>
                  <td>{event.heldMillis !== undefined ? formatDuration(event.heldMillis) : ''}</td>
                  <td>
                    {[event.actor, event.reason, event.cause, event.auditId ? `audit ${event.auditId}` : undefined].filter(Boolean).join(' · ')}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}
