/**
 * Lease keep-alives of every session on one long-lived LeaseKeepAlive stream of the shared
 * client, instead of a stream opened and closed per heartbeat: concurrent heartbeats are
 * messages on one HTTP/2 stream (what etcd's own clients do). etcd answers each request
 * with the lease id and its remaining TTL (0 when the lease is gone), in order per lease, so
 * answers are matched to callers by id, first come first served. A broken stream fails its
 * waiting callers with a message the store's retry policy reads as "etcd unavailable", and
 * the next keep-alive opens a new stream.
 */
import type { Etcd3 } from 'etcd3';

const KEEPALIVE_TIMEOUT_MS = 3_000;

interface KeepAliveStream {
  on(event: 'data', listener: (data: { ID: string | number; TTL: string | number }) => void): unknown;
  on(event: 'error' | 'end', listener: (error?: Error) => void): unknown;
  write(message: { ID: string }): unknown;
  end(): unknown;
}

interface Waiter {
  resolve: (ttlSeconds: number) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

export class SharedKeepAlive {
  private stream: Promise<KeepAliveStream> | null = null;
  private openedOn: Etcd3 | null = null;
  private readonly waiting = new Map<string, Waiter[]>();

  constructor(private readonly client: () => Etcd3) {}

  /** One keep-alive; resolves with the remaining TTL in seconds (<= 0 when the lease is gone). */
  async keepAlive(leaseId: string): Promise<number> {
    const stream = await this.open();
    return new Promise<number>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          this.remove(leaseId, waiter);
          reject(new Error('lease keep-alive timed out'));
        }, KEEPALIVE_TIMEOUT_MS),
      };
      const queue = this.waiting.get(leaseId) ?? [];
      queue.push(waiter);
      this.waiting.set(leaseId, queue);
      stream.write({ ID: leaseId });
    });
  }

  close(): void {
    const stream = this.stream;
    this.stream = null;
    this.openedOn = null;
    void stream?.then((s) => s.end(), () => {});
    this.failAll(new Error('lease keep-alive stream closed: server stopped'));
  }

  private open(): Promise<KeepAliveStream> {
    const client = this.client();
    // A new client (failover, restart) gets its own stream; the old one is left to close.
    if (this.stream && this.openedOn === client) return this.stream;
    this.openedOn = client;
    const opening: Promise<KeepAliveStream> = (client.leaseClient.leaseKeepAlive() as Promise<unknown> as Promise<KeepAliveStream>).then(
      (stream) => {
        stream.on('data', (data) => {
          const id = String(data.ID);
          const queue = this.waiting.get(id);
          const waiter = queue?.shift();
          if (queue && queue.length === 0) this.waiting.delete(id);
          if (!waiter) return;
          clearTimeout(waiter.timer);
          waiter.resolve(Number(data.TTL));
        });
        const broken = (error?: Error) => {
          if (this.stream === opening) {
            this.stream = null;
            this.openedOn = null;
          }
          this.failAll(error ?? new Error('lease keep-alive stream ended: etcd unavailable'));
        };
        stream.on('error', broken);
        stream.on('end', broken);
        return stream;
      },
      (error: unknown) => {
        if (this.stream === opening) {
          this.stream = null;
          this.openedOn = null;
        }
        throw error;
      },
    );
    this.stream = opening;
    return opening;
  }

  private remove(leaseId: string, waiter: Waiter) {
    const queue = this.waiting.get(leaseId);
    if (!queue) return;
    const at = queue.indexOf(waiter);
    if (at >= 0) queue.splice(at, 1);
    if (queue.length === 0) this.waiting.delete(leaseId);
  }

  private failAll(error: Error) {
    const all = [...this.waiting.values()].flat();
    this.waiting.clear();
    for (const waiter of all) {
      clearTimeout(waiter.timer);
      waiter.reject(error);
    }
  }
}
