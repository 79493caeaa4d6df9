'use client';
/**
 * Who waits for this key now, and for whom: the waits of every server instance sharing the store
 * (A7w, read from the store's wait state), each session named by its owner. A wait on a key that
 * admits several holders waits for any one of them to leave, so it lists them all.
 */
import { useWaitGraph } from '../../../components/insight-queries';
import { Empty, ErrorState, Loading } from '../../../components/query-state';
import { SessionName } from '../../../components/session-name';
import type { WaitEdge } from '../../../lib/insight-types';

export function KeyWaits({ lockKey }: { lockKey: string }) {
  const graph = useWaitGraph();
  const waits = graph.data ? waitsOn(graph.data.items, lockKey) : undefined;
  const where = graph.data?.scope === 'instance' ? 'this server instance' : 'every server instance sharing the store';
  return (
    <>
      <h2>Waiting for this key</h2>
      {graph.isError ? <ErrorState error={graph.error} what="the waits" /> : null}
      {graph.isPending ? <Loading what="the waits" /> : null}
      {waits && waits.length === 0 ? <Empty>No acquire waits for this key on {where}.</Empty> : null}
      {waits && waits.length > 0 ? (
        <div className="table-wrap">
          <p className="legend muted">Acquires waiting on the server for this key, on {where}.</p>
          <table className="table" data-testid="key-waits-table">
            <thead>
              <tr>
                <th scope="col">Waiting session</th>
                <th scope="col">Waits for</th>
              </tr>
            </thead>
            <tbody>
              {waits.map((wait) => (
                <tr key={wait.sessionId} data-testid="key-wait-row" data-session={wait.sessionId}>
                  <td className="session-cell">
                    <SessionName sessionId={wait.sessionId} owner={wait.owner} />
                  </td>
                  <td className="session-cell">
                    {wait.holders.length === 0 ? <span className="muted">(holder not seen yet)</span> : null}
                    {wait.holders.length > 1 ? <div className="muted">any one of its {wait.holders.length} holders to leave:</div> : null}
                    {wait.holders.map((holder) => (
                      <div key={holder.sessionId} data-testid="key-wait-holder">
                        <SessionName sessionId={holder.sessionId} owner={holder.owner} />
                      </div>
                    ))}
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

interface KeyWait {
  sessionId: string;
  owner: string | undefined;
  holders: { sessionId: string; owner: string | undefined }[];
}

/** The graph's edges on `key`, one row per waiting session (a multi-holder key has an edge per holder). */
function waitsOn(items: readonly WaitEdge[], key: string): KeyWait[] {
  const bySession = new Map<string, KeyWait>();
  for (const edge of items) {
    if (edge.key !== key) continue;
    let wait = bySession.get(edge.waiterSessionId);
    if (!wait) bySession.set(edge.waiterSessionId, (wait = { sessionId: edge.waiterSessionId, owner: edge.waiterOwner, holders: [] }));
    if (edge.holderSessionId) wait.holders.push({ sessionId: edge.holderSessionId, owner: edge.holderOwner });
  }
  return [...bySession.values()];
}
