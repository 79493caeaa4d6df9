'use client';
/**
 * The most contended keys (A7) over the server's sliding window: contended
 * attempts, who is waiting, who holds the key now. Counts are what the
 * answering server instance saw (C3, A7).
 */
import Link from 'next/link';
import { useState } from 'react';
import { useContention } from '../../components/insight-queries';
import { LiveControl } from '../../components/live';
import { Empty, ErrorState, Loading } from '../../components/query-state';

const ROW_CHOICES = [10, 25, 50, 100] as const;

export function ContentionView() {
  const [limit, setLimit] = useState<number>(25);
  const top = useContention(limit);
  const data = top.data;
  return (
    <>
      <div className="page-head">
        <h1>Contention</h1>
        <LiveControl updatedAt={top.dataUpdatedAt} fetching={top.isFetching} failing={top.isError} />
      </div>
      <div className="toolbar">
        <label htmlFor="rows">Rows</label>
        <select id="rows" value={limit} onChange={(e) => setLimit(Number(e.target.value))}>
          {ROW_CHOICES.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </div>
      <p className="legend muted">
        Contended attempts (answered LOCK_CONTENDED or CONTENTION_EXCEEDED) per key over the last{' '}
        {data ? `${Math.round(data.windowMillis / 1000)} s` : 'minute'}, most first, as this server instance saw them.
        Counts are exact while fewer keys are contended than the server keeps counters for (1,024), and never undercounted.
      </p>
      {top.isError ? <ErrorState error={top.error} what="contention" /> : null}
      {top.isPending ? <Loading what="contention" /> : null}
      {data && data.items.length === 0 ? <Empty>No acquire was contended in the window.</Empty> : null}
      {data && data.items.length > 0 ? (
        <div className="table-wrap">
          <table className="table" data-testid="contention-table">
            <thead>
              <tr>
                <th scope="col" className="num">
                  #
                </th>
                <th scope="col">Key</th>
                <th scope="col" className="num">
                  Contended
                </th>
                <th scope="col" className="num">
                  Waiters
                </th>
                <th scope="col">Holder</th>
                <th scope="col">Holder session</th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((item, i) => (
                <tr key={item.key} data-testid="contention-row" data-key={item.key} className={item.waiters > 0 ? 'row-waiters' : undefined}>
                  <td className="num">{i + 1}</td>
                  <td className="mono key-cell">
                    <Link href={`/locks/${encodeURIComponent(item.key)}`}>{item.key}</Link>
                  </td>
                  <td className="num" data-testid="contention-count">
                    {item.contended}
                  </td>
                  <td className="num" data-testid="contention-waiters">
                    {item.waiters > 0 ? <span className="badge badge-warn">{item.waiters} waiting</span> : <span className="muted">0</span>}
                  </td>
                  <td>{item.holderSessionId ? item.holderOwner || <span className="muted">(no owner)</span> : <span className="muted">free</span>}</td>
                  <td className="mono session-cell">{item.holderSessionId ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}
