'use client';
/**
 * Who waits for whom: acquires waiting on the server (waitMillis > 0), the key
 * each waits for and the session holding it, drawn as a graph with any cycle
 * (deadlock) in red, and the cycles broken lately. The fleet breaks a cycle within
 * about a second by answering its youngest wait DEADLOCK_DETECTED, so a live cycle is
 * rarely on screen; the broken ones say which sessions and keys were caught and who
 * gave way. The waits are the fleet's (every instance sharing the store, read from the store's wait state),
 * each session named by its owner; the deadlocks broken are the answering instance's.
 */
import Link from 'next/link';
import { useWaitGraph } from '../../components/insight-queries';
import { LiveControl } from '../../components/live';
import { Empty, ErrorState, Loading } from '../../components/query-state';
import { SessionName } from '../../components/session-name';
import { WaitGraphSvg } from '../../components/wait-graph-svg';

export function WaitsView() {
  const graph = useWaitGraph();
  const data = graph.data;
  return (
    <>
      <div className="page-head">
        <h1>Waits</h1>
        <LiveControl updatedAt={graph.dataUpdatedAt} fetching={graph.isFetching} failing={graph.isError} />
      </div>
      <p className="legend muted">
        Acquires waiting for a key another session holds, on {data?.scope === 'instance' ? 'this server instance' : 'every server instance sharing the store'}. An arrow goes from the waiting session to the
        holder; a cycle of arrows (in red) is a deadlock: none of its sessions can get what it waits for until one gives up.
        Holdfast breaks a deadlock by answering the youngest wait in it <code>409 DEADLOCK_DETECTED</code> (it keeps what it
        holds); those are listed below. A wait on a semaphore or a shared lock has a dashed arrow to each of its holders: any
        one of them leaving lets it in, so such a wait closes no deadlock.
      </p>
      {graph.isError ? <ErrorState error={graph.error} what="the waits" /> : null}
      {graph.isPending ? <Loading what="the waits" /> : null}
      {data && data.items.length === 0 ? <Empty>No acquire is waiting.</Empty> : null}
      {data && data.broken.length > 0 ? (
        <div className="card" data-testid="deadlocks-broken">
          <h2>Deadlocks broken lately</h2>
          <ul>
            {data.broken.map((d) => (
              <li key={`${d.at}-${d.victimSessionId}`} data-testid="deadlock-broken">
                <time dateTime={new Date(d.at).toISOString()}>{new Date(d.at).toLocaleTimeString()}</time>{' '}
                cycle <span className="mono">{[...d.sessions, d.sessions[0]].join(' → ')}</span> over keys{' '}
                {d.keys.map((k, i) => (
                  <span key={k}>
                    {i > 0 ? ', ' : ''}
                    <Link href={`/locks/${encodeURIComponent(k)}`} className="mono">
                      {k}
                    </Link>
                  </span>
                ))}
                : <span className="mono">{d.victimSessionId}</span> was answered DEADLOCK_DETECTED on{' '}
                <span className="mono">{d.key}</span>
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      {data && data.cycles.length > 0 ? (
        <div className="banner banner-error" role="alert" data-testid="deadlock-banner">
          <strong>{data.cycles.length === 1 ? 'A deadlock' : `${data.cycles.length} deadlocks`}:</strong>{' '}
          {data.cycles.map((cycle) => [...cycle, cycle[0]].join(' → ')).join('; ')}
        </div>
      ) : null}
      {data && data.items.length > 0 ? (
        <div className="waits-layout">
          <div className="card">
            <WaitGraphSvg items={data.items} cycles={data.cycles} />
          </div>
          <div className="table-wrap">
            <table className="table" data-testid="waits-table">
              <thead>
                <tr>
                  <th scope="col">Waiting session</th>
                  <th scope="col">Key</th>
                  <th scope="col">Held by</th>
                </tr>
              </thead>
              <tbody>
                {data.items.map((w, i) => (
                  <tr key={`${w.waiterSessionId}-${w.key}-${i}`} data-testid="wait-row">
                    <td className="session-cell">
                      <SessionName sessionId={w.waiterSessionId} owner={w.waiterOwner} />
                    </td>
                    <td className="mono key-cell">
                      <Link href={`/locks/${encodeURIComponent(w.key)}`}>{w.key}</Link>
                    </td>
                    <td className="session-cell">
                      {w.holderSessionId ? <SessionName sessionId={w.holderSessionId} owner={w.holderOwner} /> : <span className="muted">(not seen yet)</span>}
                      {w.holderKind ? (
                        <span className="badge" data-testid="wait-holder-kind" title="one of the key's holders: any one leaving lets the waiter in">
                          {w.holderKind}
                        </span>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </div>
      ) : null}
    </>
  );
}
