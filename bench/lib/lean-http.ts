/**
 * A lean HTTP/1.1 client for the load generator: one kept-alive socket per
 * worker, one request at a time, a hand-built request and a minimal response
 * parser (status line, Content-Length, body). On this 2-core machine every
 * client CPU cycle is taken from the server being measured; node:http cost
 * about 0.5 ms of CPU per request here, this costs a fraction of that.
 *
 * It expects what Holdfast sends: Content-Length framed bodies, no chunking.
 */
import net from 'node:net';

export interface JsonResponse {
  status: number;
  body: unknown;
}

const HEADER_END = Buffer.from('\r\n\r\n');

export class LeanHttpConnection {
  private readonly socket: net.Socket;
  private buffered: Buffer = Buffer.alloc(0);
  private pending: { resolve: (r: JsonResponse) => void; reject: (e: Error) => void } | null = null;
  private failure: Error | null = null;

  private constructor(socket: net.Socket, private readonly hostHeader: string) {
    this.socket = socket;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
      this.tryParse();
    });
    const fail = (error: Error) => {
      this.failure ??= error;
      this.pending?.reject(error);
      this.pending = null;
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('connection closed by the server')));
  }

  static open(baseUrl: string): Promise<LeanHttpConnection> {
    const url = new URL(baseUrl);
    if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost') {
      return Promise.reject(new Error(`bench traffic stays on loopback; refusing ${baseUrl}`));
    }
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: url.hostname, port: Number(url.port) }, () => {
        socket.off('error', reject);
        resolve(new LeanHttpConnection(socket, url.host));
      });
      socket.once('error', reject);
    });
  }

  /** `bearer`: sent as `Authorization: Bearer <bearer>` (the session token of L2–L6). */
  request(method: 'POST' | 'DELETE', path: string, body?: unknown, bearer?: string): Promise<JsonResponse> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.pending) return Promise.reject(new Error('one request at a time per connection'));
    const payload = body === undefined ? '' : JSON.stringify(body);
    const head =
      `${method} ${path} HTTP/1.1\r\nHost: ${this.hostHeader}\r\n` +
      (payload ? `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n` : '') +
      (bearer ? `Authorization: Bearer ${bearer}\r\n` : '') +
      '\r\n';
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.socket.write(head + payload);
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private tryParse(): void {
    if (!this.pending) return;
    const headerEnd = this.buffered.indexOf(HEADER_END);
    if (headerEnd < 0) return;
    const head = this.buffered.subarray(0, headerEnd).toString('latin1');
    const status = Number(head.slice(9, 12));
    const lengthMatch = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (/\r\ntransfer-encoding:/i.test(head)) {
      this.pending.reject(new Error('unexpected Transfer-Encoding in a response'));
      this.pending = null;
      return;
    }
    const length = lengthMatch ? Number(lengthMatch[1]) : 0;
    const bodyStart = headerEnd + HEADER_END.length;
    if (this.buffered.length < bodyStart + length) return;
    const text = this.buffered.subarray(bodyStart, bodyStart + length).toString('utf8');
    this.buffered = this.buffered.subarray(bodyStart + length);
    const { resolve, reject } = this.pending;
    this.pending = null;
    try {
      resolve({ status, body: text ? (JSON.parse(text) as unknown) : undefined });
    } catch (error) {
      reject(error instanceof Error ? error : new Error(String(error)));
    }
  }
}
