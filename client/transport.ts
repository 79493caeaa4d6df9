/**
 * The SDK's one seam to the network. The default on Node is NodeHttpTransport
 * (node-http-transport.ts: node:http with a keep-alive pool); FetchTransport
 * below sends through the global `fetch`, for runtimes without node:http or a
 * custom `fetch`. The seeded simulation and unit tests pass their own.
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

/**
 * HTTP over the global fetch. Not the default on Node: there it costs several
 * times node:http's CPU per request (see node-http-transport.ts).
 */
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
    return { status: response.status, header: (name) => response.headers.get(name), body: decodeBody(text) };
  }
}

/** An answer's body: parsed JSON, undefined when empty, or the text itself when it is not JSON. */
export function decodeBody(text: string): unknown {
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    // A proxy's HTML error page: keep the text so the error message can show it.
    return text;
  }
}
