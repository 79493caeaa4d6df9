/**
 * A TCP proxy in front of one etcd member's peer port that knows, per
 * connection, which member opened it: etcd's peer requests (raft streams and
 * pipelines) name their sender in the `X-Server-From` header. Cutting a set of
 * senders black-holes their connections (bytes swallowed both ways, sockets
 * left open) while the others' pass: with one proxy per member, cutting member
 * X on every other member's proxy and everything on X's own is a network
 * partition of X from the rest, without touching the host's firewall.
 */
import net from 'node:net';

export interface PeerProxy {
  readonly port: number;
  /** Member ids (hex, as etcd sends them) whose connections are cut; `all` cuts everyone. */
  cut(senders: 'all' | ReadonlySet<string>): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startPeerProxy(target: { host: string; port: number }, port = 0): Promise<PeerProxy> {
  let cut: 'all' | ReadonlySet<string> = new Set();
  const sockets = new Set<net.Socket>();
  /**
   * Per open connection: close it if it is cut (on heal, a cut stream has lost bytes: make etcd reconnect).
   * Every open connection stays listed until it ends — one that outlives a heal can be cut again later,
   * and resuming it after swallowed bytes would hand etcd a torn raft stream (it panics decoding it).
   */
  const connections = new Set<() => boolean>();
  const isCut = (sender: string | undefined) => cut === 'all' || (sender !== undefined && cut.has(sender));
  const server = net.createServer((client) => {
    let sender: string | undefined;
    let head = '';
    const upstream = net.connect(target);
    sockets.add(client);
    sockets.add(upstream);
    client.on('data', (chunk: Buffer) => {
      if (sender === undefined && head.length < 8192) {
        head += chunk.toString('latin1');
        sender = /x-server-from:\s*([0-9a-f]+)/i.exec(head)?.[1]?.toLowerCase();
      }
      if (!isCut(sender)) upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!isCut(sender)) client.write(chunk);
    });
    const closeIfCut = () => {
      if (!isCut(sender)) return false;
      end();
      return true;
    };
    connections.add(closeIfCut);
    const end = () => {
      connections.delete(closeIfCut);
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut: (senders) => {
      cut = senders;
    },
    heal: () => {
      for (const closeIfCut of [...connections]) closeIfCut();
      cut = new Set();
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
