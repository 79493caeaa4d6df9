/**
 * The SDK transport with a "crash" switch: while partitioned every request fails
 * as a dead network would, so the session stops heartbeating and the server
 * expires it — what an operator sees when a worker freezes or loses its network.
 */
import { FetchTransport, type Transport, type TransportRequest, type TransportResponse } from '../client/index.js';

export class PartitionableTransport implements Transport {
  private readonly inner: FetchTransport;
  private partitioned = false;

  constructor(baseUrl: string) {
    this.inner = new FetchTransport(baseUrl);
  }

  partition(): void {
    this.partitioned = true;
  }

  heal(): void {
    this.partitioned = false;
  }

  async send(request: TransportRequest): Promise<TransportResponse> {
    if (this.partitioned) throw new TypeError('fetch failed (demo: worker crashed, network unreachable)');
    return this.inner.send(request);
  }
}
