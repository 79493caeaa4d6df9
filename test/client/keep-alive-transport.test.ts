/**
 * KeepAliveHttpTransport's own connection rules, against a raw TCP server on
 * loopback that frames its answers byte by byte as a script says: a socket the
 * server closed while idle is not reused, a connection that must close does,
 * bytes nobody asked for drop the connection, what would corrupt a request's
 * framing never reaches the wire, and idle sockets do not keep a process alive.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeepAliveHttpTransport } from '../../client/keep-alive-http-transport.js';

interface Received {
  connection: number;
  head: string;
}

/** What the server sends for a request line's path, and whether it then closes the socket. */
const SCRIPT: Record<string, { answer: string; close?: 'after' }> = {
  '/ok': { answer: 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}' },
  // Kept alive by the protocol, then closed by the server anyway (an idle timeout, a restart).
  '/ok-then-fin': { answer: 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}', close: 'after' },
  '/close': { answer: 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}', close: 'after' },
  // An answer followed by bytes nobody asked for.
  '/surplus': { answer: 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}' },
  '/garbage': { answer: 'NOT HTTP AT ALL\r\n\r\n' },
  // A body framed by the connection's end, which never comes.
  '/unframed': { answer: 'HTTP/1.1 200 OK\r\n\r\n{"partial":' },
};

const received: Received[] = [];
const sockets = new Map<number, net.Socket>();
let server: net.Server;
let baseUrl: string;
let connections = 0;

beforeAll(async () => {
  server = net.createServer((socket) => {
    connections += 1;
    const connection = connections;
    sockets.set(connection, socket);
    socket.on('close', () => sockets.delete(connection));
    let buffered = '';
    socket.setEncoding('latin1');
    socket.on('data', (text: string) => {
      buffered += text;
      for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
        const head = buffered.slice(0, end);
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        buffered = buffered.slice(end + 4 + length);
        received.push({ connection, head });
        const path = head.split(' ')[1] ?? '';
        const step = SCRIPT[path] ?? { answer: 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n' };
        socket.write(step.answer);
        if (step.close === 'after') socket.end();
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
});

afterAll(async () => {
  for (const socket of sockets.values()) socket.destroy();
  await new Promise((resolve) => server.close(resolve));
});

const connectionOfLast = () => received.at(-1)!.connection;

/** A fresh transport for one test, closed after it whatever happens. */
async function withTransport(use: (transport: KeepAliveHttpTransport) => Promise<void>): Promise<void> {
  const transport = new KeepAliveHttpTransport(baseUrl);
  try {
    await use(transport);
  } finally {
    transport.close();
  }
}

describe('KeepAliveHttpTransport connections', () => {
  it('a connection the server closed while idle is not reused: the next request opens a new one and is answered', async () => {
    await withTransport(async (transport) => {
      await transport.send({ method: 'GET', path: '/ok-then-fin' });
      const first = connectionOfLast();
      // The server's side is gone once the client has taken in its FIN and closed its own half.
      await expect.poll(() => sockets.has(first)).toBe(false);
      const answer = await transport.send({ method: 'GET', path: '/ok' });
      expect(answer.body).toEqual({ ok: true });
      expect(connectionOfLast()).not.toBe(first);
    });
  });

  it('Connection: close is honoured: the next request goes on a new connection', async () => {
    await withTransport(async (transport) => {
      await transport.send({ method: 'GET', path: '/close' });
      const first = connectionOfLast();
      await transport.send({ method: 'GET', path: '/ok' });
      expect(connectionOfLast()).not.toBe(first);
    });
  });

  it('bytes past the answer drop the connection, and the answer itself still counts', async () => {
    await withTransport(async (transport) => {
      const answer = await transport.send({ method: 'GET', path: '/surplus' });
      expect(answer.status).toBe(200);
      const first = connectionOfLast();
      await transport.send({ method: 'GET', path: '/ok' });
      expect(connectionOfLast()).not.toBe(first);
    });
  });

  it('an answer that is not HTTP rejects with a protocol error', async () => {
    await withTransport(async (transport) => {
      await expect(transport.send({ method: 'GET', path: '/garbage' })).rejects.toThrow(/not an HTTP\/1\.x status line/);
      expect((await transport.send({ method: 'GET', path: '/ok' })).status).toBe(200);
    });
  });

  it('a header value with a line break, a bad header name or an unencoded path never reaches the wire', async () => {
    await withTransport(async (transport) => {
      const before = received.length;
      await expect(transport.send({ method: 'GET', path: '/ok', headers: { authorization: 'Bearer x\r\nx-injected: 1' } })).rejects.toThrow(TypeError);
      await expect(transport.send({ method: 'GET', path: '/ok', headers: { 'bad name': 'v' } })).rejects.toThrow(TypeError);
      await expect(transport.send({ method: 'GET', path: '/ok two' })).rejects.toThrow(TypeError);
      await expect(transport.send({ method: 'GET', path: '/clé' })).rejects.toThrow(TypeError);
      await expect(transport.send({ method: 'GET', path: '/ok', headers: { baggage: 'a=\u0007' } })).rejects.toThrow(TypeError);
      const smuggled = 'GET /evil HTTP/1.1\r\nx-injected: 1\r\n\r\nGET' as 'GET';
      await expect(transport.send({ method: smuggled, path: '/ok' })).rejects.toThrow(TypeError);
      expect(received.length).toBe(before);
      // The transport is still fine for a well-formed request.
      expect((await transport.send({ method: 'GET', path: '/ok', headers: { authorization: 'Bearer x' } })).status).toBe(200);
      expect(received.at(-1)!.head).toContain('\r\nauthorization: Bearer x');
    });
  });

  it('close() with an answer framed by the connection\'s end in flight rejects it: a cut body is not an answer', async () => {
    const transport = new KeepAliveHttpTransport(baseUrl);
    const pending = transport.send({ method: 'GET', path: '/unframed' });
    await expect.poll(() => received.at(-1)?.head.startsWith('GET /unframed')).toBe(true);
    transport.close();
    await expect(pending).rejects.toThrow('the transport was closed');
  });

  it('after close(), a request rejects without connecting', async () => {
    const transport = new KeepAliveHttpTransport(baseUrl);
    transport.close();
    const before = connections;
    await expect(transport.send({ method: 'GET', path: '/ok' })).rejects.toThrow('closed');
    expect(connections).toBe(before);
  });

  it('idle pooled sockets do not keep a process alive', async () => {
    // A child that sends one request and never closes the transport must still exit on its own.
    const script = [
      `import { KeepAliveHttpTransport } from ${JSON.stringify(fileURLToPath(new URL('../../client/keep-alive-http-transport.ts', import.meta.url)))};`,
      `const answer = await new KeepAliveHttpTransport(${JSON.stringify(baseUrl)}).send({ method: 'GET', path: '/ok' });`,
      'console.log(answer.status);',
    ].join('\n');
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (output += text));
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
    clearTimeout(killer);
    expect({ code, signal, output: output.trim() }).toEqual({ code: 0, signal: null, output: '200' });
  }, 90_000);
});
