/**
 * A network between one client and the FakeLockServer, on the shared Clock:
 * per-direction latency, and faults that drop a request, drop its response
 * (the server acted, the client never hears), or reset the connection.
 * A dropped message hangs until the request's signal aborts, like a socket
 * that never answers.
 */
import type { Clock } from '../../../client/clock.js';
import type { Transport, TransportRequest, TransportResponse } from '../../../client/transport.js';
import type { FakeLockServer } from './fake-lock-server.js';

export type Fault = 'none' | 'drop_request' | 'drop_response' | 'reset';

export interface FakeNetwork {
  /** One-way latency in ms for the next message; undefined or 0 means the same instant. */
  latency?: () => number;
  fault?: (request: TransportRequest) => Fault;
}

/** The first L4's answer is lost (the server granted it; the client never hears); every other message goes through. */
export function dropFirstAcquireAnswer(): FakeNetwork {
  let dropped = false;
  return {
    fault: (request) => {
      if (dropped || !request.path.endsWith('/acquire')) return 'none';
      dropped = true;
      return 'drop_response';
    },
  };
}

export class FakeTransport implements Transport {
  sent = 0;

  constructor(
    private readonly server: FakeLockServer,
    private readonly clock: Clock,
    private readonly network: FakeNetwork = {},
  ) {}

  async send(request: TransportRequest): Promise<TransportResponse> {
    this.sent += 1;
    request.signal?.throwIfAborted();
    await this.travel(request.signal);
    const fault = this.network.fault?.(request) ?? 'none';
    if (fault === 'drop_request') return hang(request.signal);
    if (fault === 'reset') throw new TypeError('fetch failed (connection reset)');
    const response = this.server.handle(request);
    if (fault === 'drop_response') return hang(request.signal);
    await this.travel(request.signal);
    return response;
  }

  private async travel(signal: AbortSignal | undefined): Promise<void> {
    const ms = this.network.latency?.() ?? 0;
    if (ms > 0) await this.clock.sleep(ms, signal);
  }
}

function hang(signal: AbortSignal | undefined): Promise<never> {
  return new Promise<never>((_, reject) => {
    signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}
