/**
 * Wait shape "per-call": each waiting call opens its own watch on its key from
 * R + 1 (DELETE events only), reads the key once the watch is registered, and
 * closes the watch in `finally`; nothing is cached per key.
 *
 * Gap-safe by construction (a watch from R + 1 replays every delete after the
 * failed attempt), but kept only as the measured alternative: on a busy
 * cluster R + 1 is already in the past when the watch opens, etcd files it in
 * its "unsynced" group, and a release landing in the next ~100 ms is delivered
 * late. bench/etcd-bench.ts measures both shapes; the store defaults to
 * SharedReleaseWatch. A compacted R + 1 cancels the watch: that is "fallback".
 */
import type { Etcd3, IKeyValue, Watcher } from 'etcd3';
import type { WaitResult } from '../spi.js';
import { range } from './etcd-client.js';
import type { KeyLayout } from './keys.js';
import { PendingWait, type AnchoredWaitRequest, type WaitStrategy } from './wait-request.js';

export class PerCallReleaseWatch implements WaitStrategy {
  private open = 0;

  constructor(
    private readonly client: Etcd3,
    private readonly keys: KeyLayout,
  ) {}

  async start(): Promise<void> {}

  async stop(): Promise<void> {}

  openWatchCount(): number {
    return this.open;
  }

  async wait(request: AnchoredWaitRequest): Promise<WaitResult> {
    const after = Number(request.observedRevision);
    const lockKey = this.keys.lock(request.key);
    const wait = new PendingWait(request.timeoutMillis, request.signal);
    const watchers: Watcher[] = [];
    const cancelled = new Set<Watcher>();
    this.open += 1;
    try {
      const watchKey = (key: Buffer, range?: { start: Buffer; end: Buffer }): void => {
        const watcher = this.client
          .watch()
          .inRange(range ?? { start: key, end: Buffer.concat([key, Buffer.from([0])]) })
          .startRevision(String(after + 1))
          .only('delete')
          .watcher();
        watchers.push(watcher);
        watcher.on('delete', (kv: IKeyValue) => {
          if (Number(kv.mod_revision) > after) wait.finish({ outcome: 'released' });
        });
        watcher.on('error', (error) => {
          // etcd cancelled it (e.g. compaction) and the library already detached it: cancelling again would hang.
          cancelled.add(watcher);
          wait.finish({ outcome: 'fallback', cause: `watch cancelled: ${error.message}` });
        });
        watcher.on('disconnected', (error) => wait.finish({ outcome: 'fallback', cause: `watch disconnected: ${error.message}` }));
        watcher.once('connected', () => void this.readCheck(key, after, wait));
      };
      // With the grant keys of a multi-holder key (keys.ts): the end of any one of them is a release.
      watchKey(lockKey, this.keys.lockRange(request.key));
      if (request.sessionId !== undefined) watchKey(this.keys.session(request.sessionId));
      for (const holder of request.holderSessionIds ?? []) watchKey(this.keys.session(holder));
      return await wait.result;
    } finally {
      wait.dispose();
      await Promise.all(watchers.filter((watcher) => !cancelled.has(watcher)).map((watcher) => watcher.cancel().catch(() => undefined)));
      this.open -= 1;
    }
  }

  /** After registration: a change already visible (key gone or re-created after R) retries at once. */
  private async readCheck(key: Buffer, after: number, wait: PendingWait): Promise<void> {
    if (wait.done) return;
    try {
      const response = await range(this.client, { key });
      const kv = response.kvs[0];
      if (!kv || Number(kv.create_revision) > after) wait.finish({ outcome: 'released' });
    } catch (error) {
      wait.finish({ outcome: 'fallback', cause: `read check failed: ${String(error)}` });
    }
  }
}
