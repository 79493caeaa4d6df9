'use client';
/** Overview cards: the five most contended keys and the five locks held longest. */
import Link from 'next/link';
import { useContention, useHeldLongest } from '../components/insight-queries';
import { LockAge } from '../components/lock-age';
import { useNow } from '../components/live';
import { ErrorState, Loading } from '../components/query-state';

const CARD_ROWS = 5;

export function InsightCards() {
  return (
    <section className="insight-cards" aria-label="Hot spots">
      <ContentionCard />
      <HeldLongestCard />
    </section>
  );
}

function ContentionCard() {
  const top = useContention(CARD_ROWS);
  const data = top.data;
  return (
    <div className="card" data-testid="card-contention">
      <div className="card-head">
        <h2>Most contended{data ? ` (last ${Math.round(data.windowMillis / 1000)} s)` : ''}</h2>
        <Link href="/contention">All</Link>
      </div>
      {top.isError ? <ErrorState error={top.error} what="contention" /> : null}
      {top.isPending ? <Loading what="contention" /> : null}
      {data && data.items.length === 0 ? <p className="muted">No contended acquire in the window.</p> : null}
      {data && data.items.length > 0 ? (
        <table className="mini">
          <tbody>
            {data.items.map((item) => (
              <tr key={item.key} data-testid="contention-card-row" data-key={item.key}>
                <th scope="row" className="mono key-cell">
                  <Link href={`/locks/${encodeURIComponent(item.key)}`}>{item.key}</Link>
                </th>
                <td className="num" data-testid="contention-card-count">
                  {item.contended}
                </td>
                <td className="muted">{item.waiters > 0 ? `${item.waiters} waiting` : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}

function HeldLongestCard() {
  const oldest = useHeldLongest(CARD_ROWS);
  const now = useNow(1000);
  const items = oldest.data?.items;
  return (
    <div className="card" data-testid="card-held-longest">
      <div className="card-head">
        <h2>Held longest</h2>
        <Link href="/locks?sort=age">All</Link>
      </div>
      {oldest.isError ? <ErrorState error={oldest.error} what="the oldest locks" /> : null}
      {oldest.isPending ? <Loading what="the oldest locks" /> : null}
      {items && items.length === 0 ? <p className="muted">No lock is held.</p> : null}
      {items && items.length > 0 ? (
        <table className="mini">
          <tbody>
            {items.map((lock) => (
              <tr key={lock.key} data-testid="held-longest-row" data-key={lock.key}>
                <th scope="row" className="mono key-cell">
                  <Link href={`/locks/${encodeURIComponent(lock.key)}`}>{lock.key}</Link>
                </th>
                <td>{lock.grantedAt ? <LockAge grantedAt={lock.grantedAt} now={now} /> : '—'}</td>
                <td className="muted">{lock.owner || ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}
