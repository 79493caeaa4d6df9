/**
 * A test load balancer on 127.0.0.1: each request goes to the next upstream in turn (round robin
 * per request, not per connection, so a browser's kept-alive connection still reaches every
 * replica). The Host header passes unchanged (the console's same-origin check compares it with
 * Origin, as behind a real proxy), and the peer is appended to X-Forwarded-For. It remembers which
 * upstream answered what, so a test can show that both replicas served it.
 *
 * A request carrying `x-test-upstream: N` goes to upstream N and does not advance the turn: a
 * test that must show each replica answering pins its own requests, because a page open in the
 * same test polls through the proxy too and would otherwise take turns in between.
 */
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';

export interface Served {
  upstream: number;
  /** Sent with the pin header (a test's own request), not in turn. */
  pinned: boolean;
  method: string;
  path: string;
  status: number;
}

export interface AlternatingProxy {
  url: string;
  served: Served[];
  stop(): Promise<void>;
}

export const PIN_HEADER = 'x-test-upstream';

function pinnedUpstream(incoming: IncomingMessage, count: number): number | undefined {
  const value = incoming.headers[PIN_HEADER];
  if (typeof value !== 'string') return undefined;
  const index = Number(value);
  if (!Number.isInteger(index) || index < 0 || index >= count) throw new Error(`${PIN_HEADER}: ${value} is not an upstream`);
  return index;
}

export async function startAlternatingProxy(upstreams: string[]): Promise<AlternatingProxy> {
  let next = 0;
  const served: Served[] = [];
  const server: Server = createServer((incoming, outgoing) => {
    let pinned: number | undefined;
    try {
      pinned = pinnedUpstream(incoming, upstreams.length);
    } catch (error) {
      outgoing.writeHead(400, { 'content-type': 'text/plain' }).end((error as Error).message);
      return;
    }
    const upstream = pinned ?? next;
    if (pinned === undefined) next = (next + 1) % upstreams.length;
    const { [PIN_HEADER]: _pin, ...headers } = incoming.headers;
    const target = new URL(upstreams[upstream]!);
    const forwardedFor = [incoming.headers['x-forwarded-for'], incoming.socket.remoteAddress].filter(Boolean).join(', ');
    const forwarded = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: incoming.method,
        path: incoming.url,
        headers: { ...headers, 'x-forwarded-for': forwardedFor },
        agent: false,
      },
      (answer: IncomingMessage) => {
        served.push({ upstream, pinned: pinned !== undefined, method: incoming.method ?? 'GET', path: incoming.url ?? '/', status: answer.statusCode ?? 0 });
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => {
      // A replica that is down (restarting): what a load balancer without health checks answers.
      served.push({ upstream, pinned: pinned !== undefined, method: incoming.method ?? 'GET', path: incoming.url ?? '/', status: 502 });
      if (!outgoing.headersSent) outgoing.writeHead(502, { 'content-type': 'text/plain' });
      outgoing.end('upstream unreachable');
    });
    incoming.pipe(forwarded);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    served,
    async stop() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
