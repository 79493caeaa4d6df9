'use client';
/**
 * Who waits for whom: acquires waiting on the server (waitMillis > 0), the key
 * each waits for and the session holding it, drawn as a graph with any cycle
 * (deadlock) in red. Until the fleet-wide wait state lands (issue 11) this is
 * the answering server instance's waits only.
 */
import Link from 'next/link';
import { useWaitGraph } from '../../components/insight-queries';
import { LiveControl } from '../../components/live';
import { Empty, ErrorState, Loading } from '../../components/query-state';
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
        Acquires waiting on this server instance for a key another session holds. An arrow goes from the waiting session to the
        holder; a cycle of arrows (in red) is a deadlock: none of its sessions can get what it waits for until one gives up.
      </p>
      {graph.isError ? <ErrorState error={graph.error} what="the waits" /> : null}
      {graph.isPending ? <Loading what="the waits" /> : null}
      {data && data.items.length === 0 ? <Empty>No acquire is waiting.</Empty> : null}
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
                    <td className="mono session-cell">{w.waiterSessionId}</td>
                    <td className="mono key-cell">
                      <Link href={`/locks/${encodeURIComponent(w.key)}`}>{w.key}</Link>
                    </td>
                    <td className="mono session-cell">{w.holderSessionId ?? <span className="muted">(not seen yet)</span>}</td>
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
