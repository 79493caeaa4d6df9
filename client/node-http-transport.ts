/**
 * The default transport on Node: HTTP/1.1 over `node:http` (or `node:https`)
 * with a keep-alive connection pool per endpoint.
 *
 * Why not the global `fetch`: on Node 20 it cost 1–3 ms of client CPU per
 * acquire+release cycle in the bench (issue 22), ten times what a kept-alive
 * node:http socket costs; a lock client spends its life in short requests, so
 * the SDK would take most of a small machine from the work it protects.
 *
 * Pool choices:
 * - keep-alive, Nagle off: a request and its answer are one small write each,
 *   and waiting to coalesce them only adds latency.
 * - no cap on sockets in use: an acquire may wait server-side for up to 30 s,
 *   and a capped pool would queue heartbeats behind such waits until the
 *   session is lost. (Node's default, and fetch's, are unlimited too.)
 * - idle sockets close after IDLE_SOCKET_MILLIS, or sooner when the server's
 *   `Keep-Alive: timeout=` asks for it, so a socket is not reused just as the
 *   server or a proxy closes it; idle sockets never keep the process alive.
 *
 * Answers are decoded as FetchTransport decodes them (transport.ts), and a
 * request that gets no answer rejects with the socket's error, or with the
 * signal's reason when its signal aborts it; the SDK turns either into a
 * retry or a TransportError as before.
 */
import http from 'node:http';
import https from 'node:https';
import { forEachCallerHeader, httpEndpoint, type HttpEndpoint } from './http-endpoint.js';
import { decodeBody, type Transport, type TransportRequest, type TransportResponse } from './transport.js';

/** Below common proxy idle timeouts (nginx 75 s, cloud load balancers 60 s) and Holdfast's own 72 s. */
export const IDLE_SOCKET_MILLIS = 30_000;

export interface NodeHttpTransportOptions {
  /** Your own agent (TLS options, a socket cap); it must match the URL's scheme. Default: the pool described above. */
  agent?: http.Agent;
}

export class NodeHttpTransport implements Transport {
  readonly #agent: http.Agent;
  readonly #request: typeof http.request;
  readonly #endpoint: HttpEndpoint;
  readonly #ownsAgent: boolean;

  /** `baseUrl`: an `http:` or `https:` URL, optionally with a path prefix (`https://gw.example/holdfast`). */
  constructor(baseUrl: string, options: NodeHttpTransportOptions = {}) {
    const url = new URL(baseUrl);
    const secure = url.protocol === 'https:';
    if (!secure && url.protocol !== 'http:') throw new TypeError(`NodeHttpTransport speaks http: and https:, not ${url.protocol}`);
    this.#request = secure ? https.request : http.request;
    this.#ownsAgent = options.agent === undefined;
    this.#agent = options.agent ?? newPool(secure);
    this.#endpoint = httpEndpoint(url);
  }

  /** True when `baseUrl` is a URL this transport can speak to (else the SDK falls back to fetch). */
  static supports(baseUrl: string): boolean {
    if (!URL.canParse(baseUrl)) return false;
    const url = new URL(baseUrl);
    // fetch refuses URLs with credentials; keep that refusal rather than send them somewhere new.
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === '';
  }

  send(request: TransportRequest): Promise<TransportResponse> {
    const { signal } = request;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const payload = request.body === undefined ? undefined : JSON.stringify(request.body);
    const headers = this.#headers(request.headers, payload);
    return new Promise<TransportResponse>((resolve, reject) => {
      let settled = false;
      const fail = (error: unknown): void => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        reject(error);
      };
      const onAbort = (): void => {
        fail(signal!.reason);
        req.destroy();
      };
      const req = this.#request(
        {
          agent: this.#agent,
          hostname: this.#endpoint.socketHost,
          port: this.#endpoint.port,
          method: request.method,
          path: this.#endpoint.pathPrefix + request.path,
          headers,
        },
        (res) => {
          // An answer is one chunk nearly always: decode once, at the end (UTF-8 split across chunks stays whole).
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            if (settled) return;
            settled = true;
            signal?.removeEventListener('abort', onAbort);
            const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
            resolve(new NodeHttpResponse(res.statusCode ?? 0, res.headers, decodeBody(text)));
          });
          // Also when the connection ends before the body does (node destroys the answer with
          // ECONNRESET "aborted"): no answer, as if it never came.
          res.on('error', fail);
        },
      );
      req.on('error', fail);
      signal?.addEventListener('abort', onAbort); // removed when the request settles, either way
      req.end(payload);
    });
  }

  /** Close every pooled socket (tests, benches, a process that is done with the client). */
  close(): void {
    if (this.#ownsAgent) this.#agent.destroy();
  }

  /** A flat name/value list (node:http writes it as is, still validating each header). */
  #headers(extra: Record<string, string> | undefined, payload: string | undefined): string[] {
    const headers = ['host', this.#endpoint.hostHeader];
    if (!forEachCallerHeader(extra, (name, value) => headers.push(name, value))) headers.push('accept', 'application/json');
    if (payload !== undefined) headers.push('content-type', 'application/json', 'content-length', String(Buffer.byteLength(payload)));
    return headers;
  }
}

function newPool(secure: boolean): http.Agent {
  const options: http.AgentOptions = {
    keepAlive: true,
    noDelay: true,
    maxSockets: Infinity,
    // Node's LIFO default: the busiest sockets stay warm, the spare ones idle out.
    scheduling: 'lifo',
    timeout: IDLE_SOCKET_MILLIS,
  };
  return secure ? new https.Agent(options) : new http.Agent(options);
}

class NodeHttpResponse implements TransportResponse {
  constructor(
    readonly status: number,
    private readonly headers: http.IncomingHttpHeaders,
    readonly body: unknown,
  ) {}

  header(name: string): string | null {
    const value = this.headers[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : value;
  }
}
