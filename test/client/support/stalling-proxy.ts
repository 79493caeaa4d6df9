/**
 * A TCP proxy in front of a real server that can stall one request: the
 * connection carrying the next request whose first bytes match is frozen — not
 * forwarded, not answered, not closed — exactly like a black-holed connection.
 * Every other connection (including later ones) is forwarded untouched.
 */
import { once } from 'node:events';
import net from 'node:net';

export interface StallingProxy {
  url: string;
  /** Freeze the connection of the next request whose request line matches. */
  stallNext(match: RegExp): void;
  /** Request lines seen, in order (`POST /v1/... HTTP/1.1`), stalled ones included. */
  readonly requests: string[];
  /** When each request line was seen and (if it was) answered, in ms since the proxy started: for a failure's report. */
  readonly timeline: string[];
  /** Request lines that were stalled. */
  readonly stalled: string[];
  close(): Promise<void>;
}

export async function startStallingProxy(target: string): Promise<StallingProxy> {
  const upstream = new URL(target);
  const pending: RegExp[] = [];
  const requests: string[] = [];
  const stalled: string[] = [];
  const timeline: string[] = [];
  const startedAt = performance.now();
  const since = (): string => (performance.now() - startedAt).toFixed(0);
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const origin = net.connect({ host: upstream.hostname, port: Number(upstream.port) });
    sockets.add(client).add(origin);
    let frozen = false;
    const connection = ++connections;
    client.on('data', (chunk: Buffer) => {
      if (frozen) return;
      // Request lines at the start of a chunk (the SDK sends one request per write here).
      for (const line of chunk.toString('latin1').match(/^(GET|POST|DELETE|PUT) \S+ HTTP\/1\.1/gm) ?? []) {
        requests.push(line);
        timeline.push(`${since()} ms conn ${connection}: ${line.replace(/ HTTP\/1\.1$/, '')}`);
        const index = pending.findIndex((m) => m.test(line));
        if (index >= 0) {
          pending.splice(index, 1);
          stalled.push(line);
          timeline.push(`${since()} ms conn ${connection}: frozen`);
          frozen = true;
        }
      }
      if (!frozen) origin.write(chunk);
    });
    origin.on('data', (chunk: Buffer) => {
      if (frozen) return;
      const status = /^HTTP\/1\.1 (\d{3})/.exec(chunk.toString('latin1'));
      if (status) timeline.push(`${since()} ms conn ${connection}: answered ${status[1]}`);
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      origin.destroy();
      sockets.delete(client);
      sockets.delete(origin);
    };
    client.on('close', end);
    origin.on('close', end);
    client.on('error', end);
    origin.on('error', end);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stallNext: (match) => pending.push(match),
    requests,
    stalled,
    timeline,
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}
