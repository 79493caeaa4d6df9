/**
 * The SDK's default transport with a switch that drops every request in flight, as a
 * reset connection does: the request rejects with a socket error (not its caller's abort)
 * and its socket is destroyed. For the watch tests: an observer's parked long poll dropped.
 */
import { KeepAliveHttpTransport } from '../../../client/keep-alive-http-transport.js';
import type { Transport, TransportRequest, TransportResponse } from '../../../client/transport.js';

export class DroppingTransport implements Transport {
  readonly #inner: KeepAliveHttpTransport;
  readonly #inFlight = new Set<AbortController>();
  dropped = 0;

  constructor(baseUrl: string) {
    this.#inner = new KeepAliveHttpTransport(baseUrl);
  }

  /** Requests in flight now (a parked watch is one). */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  async send(request: TransportRequest): Promise<TransportResponse> {
    const controller = new AbortController();
    const onCallerAbort = (): void => controller.abort(request.signal!.reason);
    if (request.signal?.aborted) throw request.signal.reason;
    request.signal?.addEventListener('abort', onCallerAbort, { once: true });
    this.#inFlight.add(controller);
    try {
      return await this.#inner.send({ ...request, signal: controller.signal });
    } finally {
      this.#inFlight.delete(controller);
      request.signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  /** Drop every request in flight, as an ECONNRESET would. */
  dropAll(): number {
    const count = this.#inFlight.size;
    for (const controller of this.#inFlight) {
      controller.abort(Object.assign(new Error('socket hang up (dropped by the test)'), { code: 'ECONNRESET' }));
    }
    this.dropped += count;
    return count;
  }

  close(): void {
    this.#inner.close();
  }
}
