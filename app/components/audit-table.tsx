'use client';
/** Audit entries, newest first; the entry named by `highlight` stands out (linked from a revoke result). */
import Link from 'next/link';
import type { AuditEntry } from '../lib/api-types';
import { formatAbsolute, shortId } from '../lib/format';
import { When } from './ttl';

export function AuditTable({ items, now, highlight }: { items: AuditEntry[]; now: number; highlight?: string | null }) {
  return (
    <div className="table-wrap">
      <table className="table" data-testid="audit-table">
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Actor</th>
            <th scope="col">Action</th>
            <th scope="col">Target</th>
            <th scope="col" className="num">
              Token
            </th>
            <th scope="col">Outcome</th>
            <th scope="col">Reason</th>
            <th scope="col">Entry</th>
          </tr>
        </thead>
        <tbody>
          {items.map((entry) => (
            <tr key={entry.id} id={`audit-${entry.id}`} className={entry.id === highlight ? 'row-highlight' : undefined} data-testid="audit-row" data-audit-id={entry.id}>
              <td>
                <When at={entry.at} now={now} />
                <div className="muted small">{formatAbsolute(entry.at)}</div>
              </td>
              <td className="nowrap">
                {entry.actor}
                {entry.actorScope ? <span className="muted" title="the key prefixes this token was scoped to when it acted"> [{entry.actorScope.join(', ')}]</span> : null}
              </td>
              <td className="mono">{entry.action}</td>
              <td className="mono key-cell">
                {entry.action === 'lock.revoke' ? <Link href={`/locks/${encodeURIComponent(entry.target)}`}>{entry.target}</Link> : entry.target}
              </td>
              <td className="mono num">{entry.fencingToken ?? '—'}</td>
              <td>
                <span className={`badge ${entry.outcome === 'REVOKED' || entry.outcome === 'KILLED' ? 'badge-ok' : 'badge-warn'}`}>{entry.outcome}</span>
              </td>
              <td className="reason">{entry.reason}</td>
              <td className="mono muted" title={`request ${entry.requestId}\nhash ${entry.hash}\nprev ${entry.prevHash}`}>
                {shortId(entry.id)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
