/**
 * Wraps the SDK's default transport for http: (KeepAliveHttpTransport) and records every request the SDK sends and
 * the status it got, so real-server tests can count L4/L5/L6 calls.
 */
import { KeepAliveHttpTransport } from '../../../client/keep-alive-http-transport.js';
import type { Transport, TransportRequest, TransportResponse } from '../../../client/transport.js';

export interface SentRequest {
  method: string;
  path: string;
  sentAt: number;
  status: number | 'no answer';
}

export class CountingTransport implements Transport {
  readonly sent: SentRequest[] = [];
  private readonly inner: Transport;

  constructor(baseUrl: string) {
    this.inner = new KeepAliveHttpTransport(baseUrl);
  }

  async send(request: TransportRequest): Promise<TransportResponse> {
    const entry: SentRequest = { method: request.method, path: request.path, sentAt: performance.now(), status: 'no answer' };
    this.sent.push(entry);
    const response = await this.inner.send(request);
    entry.status = response.status;
    return response;
  }

  count(suffix: '/acquire' | '/renew' | '/release' | '/heartbeat'): number {
    return this.sent.filter((r) => r.path.endsWith(suffix)).length;
  }
}
