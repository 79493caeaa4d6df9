/**
 * A PostgreSQL-aware TCP proxy on a loopback port, for store-outage tests.
 *
 * `cut()` makes the database unreachable for the server behind it: new
 * connections are refused (ECONNREFUSED, as when PostgreSQL is down), and each
 * open connection, once its in-flight statement has been answered, is
 * detached from PostgreSQL and answers every further statement with
 * `57P03 cannot_connect_now` — without closing the socket. `restore()`
 * listens again; the pool replaces the failed connections by itself.
 *
 * Why not simply close the open sockets: a pg client that loses its socket
 * while checked out of the pool (inside a transaction) emits an unhandled
 * 'error' and takes the whole server process down. That is a server bug
 * (lock/store/sql/pg-database.ts), reported separately; `cut({ hard: true })`
 * reproduces it. This proxy's default cut keeps the test about monitoring.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  cut(options?: { hard?: boolean }): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** Splits a PostgreSQL protocol stream into messages (type byte + int32 length incl. itself). */
class MessageReader {
  private buffer = Buffer.alloc(0);
  constructor(private startup: boolean) {}
  push(chunk: Buffer): { type: string; body: Buffer; raw: Buffer }[] {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const messages: { type: string; body: Buffer; raw: Buffer }[] = [];
    for (;;) {
      if (this.startup) {
        // The client's first message (StartupMessage / SSLRequest) has no type byte.
        if (this.buffer.length < 4) break;
        const length = this.buffer.readInt32BE(0);
        if (this.buffer.length < length) break;
        const raw = this.buffer.subarray(0, length);
        this.buffer = this.buffer.subarray(length);
        this.startup = false;
        messages.push({ type: '', body: raw.subarray(4), raw });
        continue;
      }
      if (this.buffer.length < 5) break;
      const length = this.buffer.readInt32BE(1);
      if (this.buffer.length < 1 + length) break;
      const raw = this.buffer.subarray(0, 1 + length);
      this.buffer = this.buffer.subarray(1 + length);
      messages.push({ type: String.fromCharCode(raw[0]!), body: raw.subarray(5), raw });
    }
    return messages;
  }
}

function message(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.write(type, 0, 'ascii');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

const field = (code: string, value: string) => Buffer.concat([Buffer.from(code, 'ascii'), Buffer.from(value, 'utf8'), Buffer.from([0])]);
const UNREACHABLE = message(
  'E',
  Buffer.concat([
    field('S', 'FATAL'),
    field('V', 'FATAL'),
    field('C', '57P03'),
    field('M', 'the database system is not reachable (injected outage)'),
    Buffer.from([0]),
  ]),
);
const READY_IDLE = message('Z', Buffer.from('I', 'ascii'));

interface Connection {
  client: Socket;
  upstream: Socket;
  /** The server answered everything sent so far (last message ReadyForQuery, nothing pending). */
  idle: boolean;
  detached: boolean;
  detachWhenIdle: boolean;
  /** Client messages to answer once detached. */
  pending: { type: string }[];
  errorSentInBatch: boolean;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const connections = new Set<Connection>();
  let server: Server | undefined;

  /** Answers client messages like a database that refuses every statement (extended and simple protocol). */
  const answer = (c: Connection, type: string) => {
    if (type === 'X') {
      c.client.end();
      return;
    }
    if (type === 'Q') {
      c.client.write(Buffer.concat([UNREACHABLE, READY_IDLE]));
      return;
    }
    if (type === 'S') {
      if (!c.errorSentInBatch) c.client.write(UNREACHABLE);
      c.client.write(READY_IDLE);
      c.errorSentInBatch = false;
      return;
    }
    if (!c.errorSentInBatch) {
      c.client.write(UNREACHABLE);
      c.errorSentInBatch = true;
    }
  };
  const detach = (c: Connection) => {
    c.detached = true;
    c.upstream.destroy();
    for (const m of c.pending.splice(0)) answer(c, m.type);
  };

  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const next = createServer((client) => {
        const upstream = createConnection(target);
        const c: Connection = { client, upstream, idle: false, detached: false, detachWhenIdle: false, pending: [], errorSentInBatch: false };
        connections.add(c);
        const fromClient = new MessageReader(true);
        const fromServer = new MessageReader(false);
        client.on('data', (chunk: Buffer) => {
          for (const m of fromClient.push(chunk)) {
            if (c.detached) answer(c, m.type);
            else if (c.detachWhenIdle) c.pending.push(m);
            else {
              c.idle = false;
              upstream.write(m.raw);
            }
          }
        });
        upstream.on('data', (chunk: Buffer) => {
          if (c.detached) return;
          for (const m of fromServer.push(chunk)) {
            client.write(m.raw);
            if (m.type === 'Z') {
              c.idle = true;
              if (c.detachWhenIdle) {
                detach(c);
                return;
              }
            }
          }
        });
        const drop = () => {
          connections.delete(c);
          client.destroy();
          upstream.destroy();
        };
        client.on('error', drop);
        client.on('close', drop);
        upstream.on('error', () => (c.detached ? undefined : drop()));
        upstream.on('close', () => (c.detached ? undefined : drop()));
      });
      next.once('error', reject);
      next.listen(port, '127.0.0.1', () => {
        server = next;
        const address = next.address();
        resolve(typeof address === 'object' && address ? address.port : port);
      });
    });

  const stopListening = async () => {
    const closing = server;
    server = undefined;
    if (closing) await new Promise<void>((resolve) => closing.close(() => resolve()));
  };
  const port = await listen(0);
  return {
    port,
    async cut(options = {}) {
      const closed = stopListening();
      for (const c of connections) {
        if (options.hard) {
          c.client.destroy();
          c.upstream.destroy();
        } else if (c.idle) detach(c);
        else c.detachWhenIdle = true;
      }
      await closed;
    },
    async restore() {
      if (!server) await listen(port);
    },
    async close() {
      await stopListening();
      for (const c of connections) {
        c.client.destroy();
        c.upstream.destroy();
      }
    },
  };
}
