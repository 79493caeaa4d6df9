/**
 * What etcd itself did during a bench window, from its Prometheus endpoint:
 * unary gRPC calls by method and raft proposals committed (one per write
 * request that went through consensus: txn with writes, lease grant/revoke, ...).
 */

export interface EtcdCounters {
  /** grpc_server_handled_total by method (Txn, Range, LeaseGrant, ...). */
  calls: Record<string, number>;
  /** etcd_server_proposals_committed_total. */
  proposals: number;
}

export async function readEtcdCounters(clientUrl: string): Promise<EtcdCounters> {
  const text = await (await fetch(`${clientUrl}/metrics`)).text();
  const calls: Record<string, number> = {};
  let proposals = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('grpc_server_handled_total{')) {
      const method = /grpc_method="([^"]+)"/.exec(line)?.[1];
      const type = /grpc_type="([^"]+)"/.exec(line)?.[1];
      if (!method || type !== 'unary') continue;
      calls[method] = (calls[method] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
    } else if (line.startsWith('etcd_server_proposals_committed_total ')) {
      proposals = Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return { calls, proposals };
}

export function counterDelta(from: EtcdCounters, to: EtcdCounters): EtcdCounters {
  const calls: Record<string, number> = {};
  for (const [method, count] of Object.entries(to.calls)) {
    const delta = count - (from.calls[method] ?? 0);
    if (delta > 0) calls[method] = delta;
  }
  return { calls, proposals: to.proposals - from.proposals };
}
