/**
 * The default transport for `http:` endpoints on Node: HTTP/1.1 over a pool of
 * kept-alive `net` sockets, one request in flight per socket, the request
 * written as one string and the answer read by Http1ResponseParser.
 *
 * Why not node:http (still the transport for `https:` and for an agent of your
 * own, node-http-transport.ts): a lock client's life is short requests, and on
 * Node 20 node:http's ClientRequest/IncomingMessage streams cost ~0.3 ms of
 * client CPU per acquire+release against ~0.08 ms for the same bytes on a bare
 * socket (`npx tsx bench/sdk-client-cpu.ts`, issue 22); undici's Pool cut
 * node:http's cost by only 10–25 % (README design notes). On a small machine
 * that CPU is taken from the work the lock protects.
 *
 * Pool rules, as NodeHttpTransport's: Nagle off; no cap on sockets in use (an
 * acquire may wait server-side for 30 s, and heartbeats must not queue behind
 * it); idle sockets are reused newest first, close after IDLE_SOCKET_MILLIS or
 * sooner when the server's `Keep-Alive: timeout=` asks, and never keep the
 * process alive. A request that gets no answer rejects with the socket's error
 * (or ECONNRESET "socket hang up" when the connection just ends), or with the
 * signal's reason when its signal aborts it; the SDK turns either into a retry
 * or a TransportError.
 */
import net from 'node:net';
import { Http1ResponseParser, HTTP_TOKEN, type ParsedResponse } from './http1-response-parser.js';
import { IDLE_SOCKET_MILLIS } from './node-http-transport.js';
import { forEachCallerHeader, httpEndpoint, type HttpEndpoint } from './http-endpoint.js';
import { decodeBody, type Transport, type TransportRequest, type TransportResponse } from './transport.js';

/** How much sooner than the server's advertised keep-alive timeout an idle socket is closed (node:http's margin too). */
const KEEP_ALIVE_HINT_MARGIN_MILLIS = 1000;
/** Tab and visible ASCII only: what the SDK sends (tokens, W3C trace context) and no line break or control byte. */
const UNSAFE_HEADER_VALUE = /[^\t\x20-\x7e]/;
/** Idle sockets kept per endpoint after a burst (node:http's default `maxFreeSockets`); more are closed. */
const MAX_IDLE_SOCKETS = 256;
/** Anything outside visible ASCII: the SDK percent-encodes keys, so this is a caller's mistake or an attack. */
const UNSAFE_PATH = /[^\x21-\x7e]/;

export class KeepAliveHttpTransport implements Transport {
  readonly #endpoint: HttpEndpoint;
  /** Idle connections, most recently used last. */
  readonly #idle: Connection[] = [];
  readonly #open = new Set<Connection>();
  #closed = false;

  /** `baseUrl`: an `http:` URL, optionally with a path prefix (`http://gw.internal/holdfast`). */
  constructor(baseUrl: string) {
    if (!KeepAliveHttpTransport.supports(baseUrl)) throw new TypeError(`KeepAliveHttpTransport speaks plain http: without credentials, not ${baseUrl}`);
    this.#endpoint = httpEndpoint(new URL(baseUrl));
  }

  /** True for an `http:` URL without credentials (https: goes through NodeHttpTransport). */
  static supports(baseUrl: string): boolean {
    if (!URL.canParse(baseUrl)) return false;
    const url = new URL(baseUrl);
    return url.protocol === 'http:' && url.username === '' && url.password === '';
  }

  send(request: TransportRequest): Promise<TransportResponse> {
    const { signal } = request;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#closed) return Promise.reject(new Error('the transport was closed'));
    let message: string;
    try {
      message = this.#message(request);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<TransportResponse>((resolve, reject) => {
      this.#connection().exchange(message, signal, resolve, reject);
    });
  }

  /** Close every socket, idle or in use (tests, benches, a process that is done with the client). */
  close(): void {
    this.#closed = true;
    // With an error: an answer framed by the connection's end must not read as complete.
    for (const connection of this.#open) connection.destroy(new Error('the transport was closed'));
  }

  #connection(): Connection {
    for (let connection = this.#idle.pop(); connection !== undefined; connection = this.#idle.pop()) {
      if (connection.usable) return connection;
    }
    const connection = new Connection(net.connect({ host: this.#endpoint.socketHost, port: this.#endpoint.port ?? 80, noDelay: true }), this);
    this.#open.add(connection);
    return connection;
  }

  /** Called by a connection whose answer came and that may carry another request. */
  parked(connection: Connection): void {
    if (this.#closed || this.#idle.length >= MAX_IDLE_SOCKETS) connection.destroy();
    else this.#idle.push(connection);
  }

  /** Called once by a connection whose socket closed. */
  gone(connection: Connection): void {
    this.#open.delete(connection);
    const at = this.#idle.indexOf(connection);
    if (at >= 0) this.#idle.splice(at, 1);
  }

  /** The request head and body as one string; throws a TypeError for what would corrupt the framing. */
  #message(request: TransportRequest): string {
    if (!HTTP_TOKEN.test(request.method)) throw new TypeError(`invalid method: ${JSON.stringify(request.method)}`);
    const path = this.#endpoint.pathPrefix + request.path;
    if (!path.startsWith('/') || UNSAFE_PATH.test(path)) throw new TypeError(`request path must be percent-encoded visible ASCII: ${JSON.stringify(path)}`);
    const payload = request.body === undefined ? undefined : JSON.stringify(request.body);
    let head = `${request.method} ${path} HTTP/1.1\r\nhost: ${this.#endpoint.hostHeader}\r\n`;
    const callerAccept = forEachCallerHeader(request.headers, (name, value) => {
      if (!HTTP_TOKEN.test(name)) throw new TypeError(`invalid header name: ${JSON.stringify(name)}`);
      if (UNSAFE_HEADER_VALUE.test(value)) throw new TypeError(`header ${name} holds a control character or non-ASCII`);
      head += `${name}: ${value}\r\n`;
    });
    if (!callerAccept) head += 'accept: application/json\r\n';
    if (payload === undefined) return `${head}\r\n`;
    return `${head}content-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`;
  }
}

interface Exchange {
  resolve(response: TransportResponse): void;
  reject(error: unknown): void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

/** One socket: at most one exchange at a time, parked in the pool between them. */
class Connection {
  readonly #socket: net.Socket;
  readonly #pool: KeepAliveHttpTransport;
  readonly #parser = new Http1ResponseParser();
  #exchange: Exchange | null = null;
  #idleTimeoutMillis = IDLE_SOCKET_MILLIS;
  #error: Error | null = null;

  constructor(socket: net.Socket, pool: KeepAliveHttpTransport) {
    this.#socket = socket;
    this.#pool = pool;
    socket.setTimeout(IDLE_SOCKET_MILLIS);
    socket.on('data', (chunk: Buffer) => this.#received(chunk));
    // Only an idle socket is closed for inactivity: a request in flight may wait server-side.
    socket.on('timeout', () => {
      if (this.#exchange === null) socket.destroy();
    });
    socket.on('error', (error: Error) => {
      this.#error ??= error;
    });
    socket.on('close', () => this.#closed());
  }

  get usable(): boolean {
    return !this.#socket.destroyed && this.#error === null;
  }

  exchange(message: string, signal: AbortSignal | undefined, resolve: Exchange['resolve'], reject: Exchange['reject']): void {
    const exchange: Exchange = { resolve, reject, signal, onAbort: undefined };
    if (signal !== undefined) {
      exchange.onAbort = () => {
        this.#settle(exchange);
        reject(signal.reason);
        this.#socket.destroy(); // its answer may still come: the socket cannot carry another request
      };
      signal.addEventListener('abort', exchange.onAbort); // removed when the exchange settles, either way
    }
    this.#exchange = exchange;
    this.#socket.ref();
    this.#socket.write(message);
  }

  destroy(error?: Error): void {
    this.#socket.destroy(error);
  }

  #received(chunk: Buffer): void {
    const exchange = this.#exchange;
    if (exchange === null) {
      // Bytes nobody asked for: the connection's framing can no longer be trusted.
      this.#socket.destroy();
      return;
    }
    let response: ParsedResponse | null;
    try {
      response = this.#parser.push(chunk);
    } catch (error) {
      this.#settle(exchange);
      exchange.reject(error);
      this.#socket.destroy();
      return;
    }
    if (response === null) return;
    this.#settle(exchange);
    if (response.reusable && !this.#parser.hasSurplus) {
      this.#adoptKeepAliveHint(response.headers.get('keep-alive'));
      this.#socket.unref();
      this.#pool.parked(this);
    } else {
      this.#socket.destroy();
    }
    exchange.resolve(new Answer(response));
  }

  #closed(): void {
    this.#pool.gone(this);
    const exchange = this.#exchange;
    if (exchange === null) return;
    this.#settle(exchange);
    const response = this.#error === null ? this.#parser.end() : null;
    if (response !== null) exchange.resolve(new Answer(response));
    else exchange.reject(this.#error ?? Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
  }

  #settle(exchange: Exchange): void {
    if (exchange.onAbort !== undefined) exchange.signal!.removeEventListener('abort', exchange.onAbort);
    this.#exchange = null;
  }

  /** `Keep-Alive: timeout=N`: close the idle socket a little before the server would. */
  #adoptKeepAliveHint(keepAlive: string | undefined): void {
    if (keepAlive === undefined) return;
    const seconds = /(?:^|[,\s])timeout=(\d+)/i.exec(keepAlive)?.[1];
    if (seconds === undefined) return;
    const millis = Math.max(1, Math.min(IDLE_SOCKET_MILLIS, Number(seconds) * 1000 - KEEP_ALIVE_HINT_MARGIN_MILLIS));
    if (millis !== this.#idleTimeoutMillis) {
      this.#idleTimeoutMillis = millis;
      this.#socket.setTimeout(millis);
    }
  }
}

class Answer implements TransportResponse {
  readonly status: number;
  readonly body: unknown;
  readonly #headers: Map<string, string>;

  constructor(response: ParsedResponse) {
    this.status = response.status;
    this.#headers = response.headers;
    this.body = decodeBody(response.body.toString('utf8'));
  }

  header(name: string): string | null {
    return this.#headers.get(name.toLowerCase()) ?? null;
  }
}
