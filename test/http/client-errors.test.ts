/**
 * Requests node's HTTP parser refuses before any route sees them get the pinned error body too (C3):
 * 400 VALIDATION_FAILED with `x-request-id` and `holdfast-backend`, never the framework's own body
 * nor a 431, and the server keeps serving. An absolute-form target is served like the origin form.
 */
import net from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ store: 'embedded' });
});
afterAll(async () => {
  await server?.stop();
});

/** Sends `raw` on a fresh connection and reads until the server closes it. */
function rawExchange(raw: string): Promise<string> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.end(raw));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

const REFUSED: [string, string][] = [
  ['an unknown method token', 'FOO /v1/locks/x HTTP/1.1\r\nHost: h\r\n\r\n'],
  ['a raw NUL in the target', 'GET /v1/locks/a\u0000b HTTP/1.1\r\nHost: h\r\n\r\n'],
  ['a malformed header name', 'GET /v1/locks/x HTTP/1.1\r\nHost: h\r\nbad header: 1\r\n\r\n'],
  ['Content-Length beside Transfer-Encoding', 'POST /v1/sessions HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
  ['headers over the limit', `GET /v1/locks/x HTTP/1.1\r\nHost: h\r\nx-pad: ${'a'.repeat(17_000)}\r\n\r\n`],
];

test.each(REFUSED)('%s: 400 with the pinned body and headers', async (_name, raw) => {
  const answer = await rawExchange(raw);
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  expect(head).toMatch(/^HTTP\/1\.1 400 /);
  expect(head).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/i);
  expect(head).toMatch(/\r\nholdfast-backend: embedded\r\n/i);
  const parsed = JSON.parse(body);
  expect(Object.keys(parsed)).toEqual(['error']);
  expect(parsed.error).toMatchObject({ code: 'VALIDATION_FAILED', retryable: false });
  expect(parsed.error.message).toMatch(/^malformed request: /);
  expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
});

test('an absolute-form request target (RFC 9112 §3.2.2) reaches a keyed route like the origin form', async () => {
  const { host } = new URL(server.url);
  const answer = await rawExchange(`GET ${server.url}/v1/locks/abs%2Fkey HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  expect(head).toMatch(/^HTTP\/1\.1 200 /);
  expect(JSON.parse(body)).toMatchObject({ key: 'abs/key', held: false });
});
