/**
 * A reverse proxy that serves a Holdfast server under a path prefix
 * (`http://127.0.0.1:P/holdfast/v1/...` → `target/v1/...`), as an ingress or API
 * gateway would; anything outside the prefix is a 404, so a client that drops
 * the prefix fails visibly.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface PrefixProxy {
  url: string;
  close(): Promise<void>;
}

export async function startPrefixProxy(target: string, prefix: string): Promise<PrefixProxy> {
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    const url = req.url ?? '/';
    if (!url.startsWith(`${prefix}/`)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`not under ${prefix}`);
      return;
    }
    const forwarded = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: url.slice(prefix.length), headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on('error', () => res.writeHead(502).end());
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${prefix}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
