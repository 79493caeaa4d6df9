/**
 * The SDK's one seam to the network. The default sends real HTTP with the
 * global `fetch`; the seeded simulation and unit tests pass their own.
 */
export type HttpMethod = 'GET' | 'POST' | 'DELETE';

export interface TransportRequest {
  method: HttpMethod;
  /** Path and query, e.g. `/v1/locks/a%2Fb/acquire`. */
  path: string;
  /** JSON-serialisable body, or undefined for none. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Aborts the request (the transport rejects with the signal's reason). */
  signal?: AbortSignal;
}

export interface TransportResponse {
  status: number;
  /** Header lookup, case-insensitive. */
  header(name: string): string | null;
  /** Parsed JSON body, or undefined when the body was empty. */
  body: unknown;
}

export interface Transport {
  send(request: TransportRequest): Promise<TransportResponse>;
}

/** HTTP over the global fetch (Node 20). */
export class FetchTransport implements Transport {
  private readonly baseUrl: string;

  constructor(
    baseUrl: string,
    private readonly fetchImpl: typeof fetch = globalThis.fetch,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  async send(request: TransportRequest): Promise<TransportResponse> {
    const headers: Record<string, string> = { accept: 'application/json', ...request.headers };
    let body: string | undefined;
    if (request.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(request.body);
    }
    const response = await this.fetchImpl(this.baseUrl + request.path, {
      method: request.method,
      headers,
      body,
      signal: request.signal,
    });
    const text = await response.text();
    let parsed: unknown;
    if (text.length > 0) {
      try {
        parsed = JSON.parse(text);
      } catch {
        // A proxy's HTML error page: keep the text so the error message can show it.
        parsed = text;
      }
    }
    return { status: response.status, header: (name) => response.headers.get(name), body: parsed };
  }
}
