/**
 * A TCP proxy in front of a real server that can stop forwarding without closing
 * anything (a black hole: packets vanish, connections stay open, connects hang),
 * then forward again.
 */
import net from 'node:net';

export interface BlackholeProxy {
  port: number;
  blackhole(): void;
  forward(): void;
  close(): Promise<void>;
}

export async function startBlackholeProxy(target: { host: string; port: number }): Promise<BlackholeProxy> {
  let holding = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    const upstream = net.connect(target);
    sockets.add(upstream);
    const pipe = (from: net.Socket, to: net.Socket) =>
      from.on('data', (chunk) => {
        // While black-holed, data is swallowed: the peer waits for an answer that never comes.
        if (!holding) to.write(chunk);
      });
    pipe(client, upstream);
    pipe(upstream, client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    blackhole: () => {
      holding = true;
    },
    forward: () => {
      holding = false;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
