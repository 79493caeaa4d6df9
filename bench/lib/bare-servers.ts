/**
 * The physical ceiling of any HTTP design on this machine: servers in this
 * process's main thread that answer the load generator's session, acquire,
 * release and close requests with canned JSON of the product's shapes — no
 * store, no core, no telemetry. `bare-node-http` is node:http with the body
 * read and JSON-parsed; `bare-fastify` is the same on Fastify with a JSON
 * schema on the body and the answer (what the product's routes cost at the
 * least). Their cycles/s and server-thread CPU per cycle bound what Holdfast's
 * HTTP surface can reach beside the load generator and PostgreSQL.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import type { BenchServer } from './servers.js';

const SESSION_ID = '00000000-0000-4000-8000-000000000000';
let nextToken = 1;

/** The answer a route gives, by the path's last segment and method: shapes as in C3. */
function cannedAnswer(method: string, url: string, body: Record<string, unknown> | undefined): { status: number; body?: unknown } {
  if (method === 'DELETE') return { status: 204 };
  if (url === '/v1/sessions') return { status: 201, body: { sessionId: SESSION_ID, sessionToken: 'hfs_bench', ttlMillis: 60000, expiresAt: Date.now() + 60000 } };
  const key = decodeURIComponent(/^\/v1\/locks\/([^/]+)/.exec(url)?.[1] ?? '');
  if (url.endsWith('/acquire')) {
    return { status: 200, body: { key, sessionId: String(body?.sessionId ?? SESSION_ID), fencingToken: String(nextToken++), ttlMillis: 30000, expiresAt: Date.now() + 30000 } };
  }
  if (url.endsWith('/release')) return { status: 200, body: { key, released: true } };
  return { status: 200, body: { sessionId: SESSION_ID, expiresAt: Date.now() + 60000 } };
}

function listening(server: http.Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

function stopper(server: http.Server): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
}

export async function startBareNodeHttpServer(): Promise<BenchServer> {
  const server = http.createServer((request, response) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (text += chunk));
    request.on('end', () => {
      const answer = cannedAnswer(request.method ?? 'GET', request.url ?? '/', text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>));
      if (answer.body === undefined) {
        response.writeHead(answer.status).end();
        return;
      }
      const payload = JSON.stringify(answer.body);
      response.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(payload) }).end(payload);
    });
  });
  server.keepAliveTimeout = 72_000;
  return { url: await listening(server), stop: stopper(server) };
}

export async function startBareFastifyServer(): Promise<BenchServer> {
  const app = Fastify({ logger: false });
  const lockBody = {
    type: 'object',
    properties: { sessionId: { type: 'string' }, ttlMillis: { type: 'integer' }, waitMillis: { type: 'integer' }, fencingToken: { type: 'string' } },
    required: ['sessionId'],
    additionalProperties: false,
  } as const;
  const grant = {
    type: 'object',
    properties: { key: { type: 'string' }, sessionId: { type: 'string' }, fencingToken: { type: 'string' }, ttlMillis: { type: 'integer' }, expiresAt: { type: 'integer' } },
  } as const;
  const released = { type: 'object', properties: { key: { type: 'string' }, released: { type: 'boolean' } } } as const;
  const answer = (method: string, url: string, body: unknown) => cannedAnswer(method, url, body as Record<string, unknown> | undefined);
  app.post('/v1/sessions', async (request, reply) => reply.code(201).send(answer('POST', request.url, request.body).body));
  app.post('/v1/locks/:key/acquire', { schema: { body: lockBody, response: { 200: grant } } }, async (request) => answer('POST', request.url, request.body).body);
  app.post('/v1/locks/:key/release', { schema: { body: lockBody, response: { 200: released } } }, async (request) => answer('POST', request.url, request.body).body);
  app.post('/v1/sessions/:id/heartbeat', async (request) => answer('POST', request.url, request.body).body);
  app.delete('/v1/sessions/:id', async (_request, reply) => reply.code(204).send());
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { url, stop: () => app.close() };
}
