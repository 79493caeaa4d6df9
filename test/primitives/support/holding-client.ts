/**
 * SDK clients for the multi-holder workloads, one per server instance.
 *
 * Until the SDK's acquire options carry `mode` and `limit` (issue 23, branch i23-sdk2), the
 * holding goes on the wire here: a transport that adds it to every L4 body of the client it
 * serves. A workload gives each role (semaphore holder, reader, writer) its own client, so one
 * holding per client is enough. Everything else is the SDK's own path (node:http transport,
 * retry loop, heartbeats, handles).
 */
import { LockClient } from '../../../client/client.js';
import { NodeHttpTransport } from '../../../client/node-http-transport.js';
import type { Transport, TransportRequest } from '../../../client/transport.js';

export interface Holding {
  mode?: 'exclusive' | 'shared';
  limit?: number;
}

class HoldingTransport implements Transport {
  constructor(
    private readonly inner: Transport,
    private readonly holding: Holding,
  ) {}

  send(request: TransportRequest) {
    const isAcquire = request.method === 'POST' && /^\/v1\/locks\/[^/]+\/acquire$/.test(request.path);
    return this.inner.send(isAcquire ? { ...request, body: { ...(request.body as object), ...this.holding } } : request);
  }
}

export function holdingClient(url: string, holding: Holding): LockClient {
  return new LockClient({ transport: new HoldingTransport(new NodeHttpTransport(url), holding) });
}
