/**
 * The three HTTP transports against a scripted node:http server on loopback:
 * KeepAliveHttpTransport (the default for http: on Node) and NodeHttpTransport
 * (https:, or an agent of your own) must answer exactly as FetchTransport does — JSON, empty and non-JSON bodies, headers, abort reasons, connection
 * errors — and keep its connections alive. The SDK-level consequences (a
 * refused endpoint becomes TransportError, a proxy's HTML page a ServerError
 * that shows it, Retry-After honoured) are checked through LockClient.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../client/client.js';
import { ServerError, TransportError } from '../../client/errors.js';
import { KeepAliveHttpTransport } from '../../client/keep-alive-http-transport.js';
import { NodeHttpTransport } from '../../client/node-http-transport.js';
import { FetchTransport, type Transport } from '../../client/transport.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  socket: number;
}

const seen: Seen[] = [];
let server: http.Server;
let baseUrl: string;
let connections = 0;
/** Requests to /hang are held here until the test lets them go. */
const hanging: http.ServerResponse[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const socketIds = req.socket as unknown as { holdfastTestId?: number };
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body, socket: socketIds.holdfastTestId! });
      const path = req.url!.replace(/^\/prefix/, '');
      if (path === '/json') {
        res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req-1', 'Holdfast-Backend': 'postgres' });
        res.end(JSON.stringify({ echo: body === '' ? null : (JSON.parse(body) as unknown), ünïcode: 'ok' }));
      } else if (path === '/empty') {
        res.writeHead(204).end();
      } else if (path.startsWith('/html')) {
        res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>502 Bad Gateway (proxy)</body></html>');
      } else if (path === '/busy') {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '2' });
        res.end(JSON.stringify({ error: { code: 'CONTENTION_EXCEEDED', message: 'too many waiters', retryable: true } }));
      } else if (path === '/chunked') {
        // A body in several writes, a multi-byte character split across two of them.
        res.writeHead(200, { 'content-type': 'application/json' });
        const bytes = Buffer.from(JSON.stringify({ word: 'naïveté' }), 'utf8');
        res.write(bytes.subarray(0, 12));
        setTimeout(() => res.end(bytes.subarray(12)), 5);
      } else if (path === '/cut') {
        // Promises 100 bytes, sends 10, drops the connection: no answer.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
        res.write('{"partial"');
        setTimeout(() => res.socket?.destroy(), 5);
      } else if (path === '/hang') {
        hanging.push(res);
      } else {
        res.writeHead(404).end();
      }
    });
  });
  server.on('connection', (socket) => {
    connections += 1;
    (socket as unknown as { holdfastTestId: number }).holdfastTestId = connections;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const res of hanging) res.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const transports: [string, (url: string) => Transport][] = [
  ['KeepAliveHttpTransport', (url) => new KeepAliveHttpTransport(url)],
  ['NodeHttpTransport', (url) => new NodeHttpTransport(url)],
  ['FetchTransport', (url) => new FetchTransport(url)],
];

describe.each(transports.slice(0, 2))('%s (the Node transports share one header rule, client/http-endpoint.ts)', (_name, make) => {
  it("the caller may replace accept; host and framing are the transport's, whatever the caller says", async () => {
    const answer = await make(baseUrl).send({
      method: 'POST',
      path: '/json',
      body: { n: 1 },
      headers: {
        Accept: 'application/json;q=0.9',
        Host: 'elsewhere.example',
        'Content-Type': 'text/plain',
        'Content-Length': '999',
        'Transfer-Encoding': 'chunked',
        Connection: 'close',
        'x-trace-note': 'kept',
      },
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ echo: { n: 1 } });
    const request = seen.at(-1)!;
    expect(request.headers.accept).toBe('application/json;q=0.9');
    expect(request.headers.host).toBe(new URL(baseUrl).host);
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['content-length']).toBe(String(Buffer.byteLength(request.body)));
    expect(request.headers['transfer-encoding']).toBeUndefined();
    expect(request.headers.connection).not.toBe('close');
    expect(request.headers['x-trace-note']).toBe('kept');
  });
});

describe.each(transports)('%s', (_name, make) => {
  it('sends JSON with the caller headers and reads a JSON answer and its headers, case-insensitively', async () => {
    const transport = make(baseUrl);
    const answer = await transport.send({
      method: 'POST',
      path: '/json',
      body: { key: 'a/b', n: 1 },
      headers: { authorization: 'Bearer tok', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ echo: { key: 'a/b', n: 1 }, ünïcode: 'ok' });
    expect(answer.header('X-Request-Id')).toBe('req-1');
    expect(answer.header('holdfast-backend')).toBe('postgres');
    expect(answer.header('retry-after')).toBeNull();
    const request = seen.at(-1)!;
    expect(request.method).toBe('POST');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers.accept).toBe('application/json');
    expect(request.headers.authorization).toBe('Bearer tok');
    expect(request.headers.traceparent).toMatch(/^00-0af7/);
    expect(request.headers['content-length']).toBe(String(Buffer.byteLength(request.body)));
  });

  it('an empty answer has an undefined body; a body-less request sends no content-type', async () => {
    const answer = await make(baseUrl).send({ method: 'DELETE', path: '/empty' });
    expect(answer.status).toBe(204);
    expect(answer.body).toBeUndefined();
    expect(seen.at(-1)!.headers['content-type']).toBeUndefined();
  });

  it("a proxy's HTML page comes back as its text, and a body in pieces is decoded whole", async () => {
    const page = await make(baseUrl).send({ method: 'GET', path: '/html' });
    expect(page.status).toBe(502);
    expect(page.body).toBe('<html><body>502 Bad Gateway (proxy)</body></html>');
    const pieces = await make(baseUrl).send({ method: 'GET', path: '/chunked' });
    expect(pieces.body).toEqual({ word: 'naïveté' });
  });

  it('keeps a base path prefix', async () => {
    const answer = await make(`${baseUrl}/prefix/`).send({ method: 'POST', path: '/json', body: {} });
    expect(answer.status).toBe(200);
    expect(seen.at(-1)!.url).toBe('/prefix/json');
  });

  it('an aborted request rejects with the signal reason, at once and when already aborted', async () => {
    const transport = make(baseUrl);
    const controller = new AbortController();
    const held = hanging.length;
    const pending = transport.send({ method: 'POST', path: '/hang', body: {}, signal: controller.signal });
    await expect.poll(() => hanging.length).toBe(held + 1);
    const reason = new DOMException('gave up', 'TimeoutError');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    const already = AbortSignal.abort(new Error('before sending'));
    await expect(transport.send({ method: 'GET', path: '/json', signal: already })).rejects.toThrow('before sending');
  });

  it('a refused connection and a connection cut mid-answer reject (no answer), not as SDK errors', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const refusedUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await make(refusedUrl).send({ method: 'GET', path: '/json' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Error);
    expect(refused).not.toBeInstanceOf(TransportError);
    const cut = await make(baseUrl).send({ method: 'GET', path: '/cut' }).catch((error: unknown) => error);
    expect(cut).toBeInstanceOf(Error);
  });
});

const pooled: [string, (url: string) => Transport & { close(): void }][] = [
  ['KeepAliveHttpTransport', (url) => new KeepAliveHttpTransport(url)],
  ['NodeHttpTransport', (url) => new NodeHttpTransport(url)],
];

describe.each(pooled)('%s connections', (_name, make) => {
  it('sequential requests reuse one kept-alive connection; concurrent ones get a connection each', async () => {
    const transport = make(baseUrl);
    try {
      const from = seen.length;
      for (let i = 0; i < 5; i += 1) await transport.send({ method: 'POST', path: '/json', body: { i } });
      const sequential = new Set(seen.slice(from).map((s) => s.socket));
      expect(sequential.size).toBe(1);
      const next = seen.length;
      await Promise.all([0, 1, 2].map((i) => transport.send({ method: 'POST', path: '/json', body: { i } })));
      const concurrent = new Set(seen.slice(next).map((s) => s.socket));
      expect(concurrent.size).toBe(3);
      // The pool keeps them: a fourth round opens nothing new.
      const before = connections;
      await Promise.all([0, 1, 2].map((i) => transport.send({ method: 'POST', path: '/json', body: { i } })));
      expect(connections).toBe(before);
    } finally {
      transport.close();
    }
  });

});

describe('NodeHttpTransport and KeepAliveHttpTransport: which URLs', () => {
  it('KeepAliveHttpTransport takes plain http: without credentials; https: stays with node:http', () => {
    expect(KeepAliveHttpTransport.supports('http://127.0.0.1:7070')).toBe(true);
    expect(KeepAliveHttpTransport.supports('http://[::1]:7070/prefix')).toBe(true);
    expect(KeepAliveHttpTransport.supports('https://holdfast.example')).toBe(false);
    expect(KeepAliveHttpTransport.supports('http://user:secret@127.0.0.1:7070')).toBe(false);
    expect(KeepAliveHttpTransport.supports('not a url')).toBe(false);
    expect(() => new KeepAliveHttpTransport('https://holdfast.example')).toThrow(TypeError);
  });

  it('only http: and https: URLs without credentials are NodeHttpTransport\'s to speak to', () => {
    expect(NodeHttpTransport.supports('http://127.0.0.1:7070')).toBe(true);
    expect(NodeHttpTransport.supports('https://holdfast.example/prefix')).toBe(true);
    expect(NodeHttpTransport.supports('http://user:secret@127.0.0.1:7070')).toBe(false);
    expect(NodeHttpTransport.supports('ftp://127.0.0.1')).toBe(false);
    expect(NodeHttpTransport.supports('not a url')).toBe(false);
  });
});

describe('LockClient on its default transport', () => {
  it("a proxy's HTML page surfaces as a ServerError that shows it", async () => {
    // Everything under /html is the proxy's 502 page.
    const error = await new LockClient({ baseUrl: `${baseUrl}/html` }).readLock('some/key').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect((error as ServerError).status).toBe(502);
    expect((error as ServerError).serverCode).toBe('UNKNOWN');
    expect((error as ServerError).message).toContain('502 Bad Gateway (proxy)');
    expect(seen.at(-1)!.url).toBe('/html/v1/locks/some%2Fkey');
  });

  it('an endpoint that refuses connections ends as TransportError with the socket error as its cause', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const refusedUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const error = await new LockClient({ baseUrl: refusedUrl }).openSession().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(((error as TransportError).cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
  }, 30_000);

  it('reads Retry-After from a 429 answer through the node:http response', async () => {
    const answer = await new NodeHttpTransport(baseUrl).send({ method: 'POST', path: '/busy', body: {} });
    expect(answer.status).toBe(429);
    expect(answer.header('Retry-After')).toBe('2');
    expect(answer.body).toMatchObject({ error: { code: 'CONTENTION_EXCEEDED' } });
  });
});
