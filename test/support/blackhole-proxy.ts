/**
 * A TCP proxy in front of a real server that can stop forwarding without closing
 * anything (a black hole: packets vanish, connections stay open, connects hang),
 * then forward again; or forward every chunk late (a slow link), in order.
 */
import net from 'node:net';

export interface BlackholeProxy {
  port: number;
  blackhole(): void;
  /** Forward again, at once (also ends a delay). */
  forward(): void;
  /** Forward each chunk `millis` late, both ways, keeping each direction's order. */
  delay(millis: number): void;
  /**
   * Closes every connection open now (new ones are accepted as before). Healing a black hole this
   * way makes the peers reconnect instead of resuming a stream whose swallowed bytes left it torn.
   */
  reset(): void;
  close(): Promise<void>;
}

export async function startBlackholeProxy(target: { host: string; port: number }): Promise<BlackholeProxy> {
  let holding = false;
  let delayMillis = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    const upstream = net.connect(target);
    sockets.add(upstream);
    const pipe = (from: net.Socket, to: net.Socket) => {
      let lastAt = 0;
      from.on('data', (chunk) => {
        // While black-holed, data is swallowed: the peer waits for an answer that never comes.
        if (holding) return;
        if (delayMillis === 0 && lastAt <= Date.now()) {
          to.write(chunk);
          return;
        }
        // Never before an earlier chunk of this direction: timers due in order fire in order.
        lastAt = Math.max(Date.now() + delayMillis, lastAt);
        setTimeout(() => to.destroyed || to.write(chunk), lastAt - Date.now());
      });
    };
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
      delayMillis = 0;
    },
    delay: (millis) => {
      holding = false;
      delayMillis = millis;
    },
    reset: () => {
      for (const socket of sockets) socket.destroy();
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
