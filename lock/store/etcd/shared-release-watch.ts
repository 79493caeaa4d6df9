/**
 * Wait shape "shared": one always-synced etcd watch per process over the whole
 * Holdfast root (DELETE events only), fanning out to in-process waiters.
 *
 * Why this shape (measured by bench/etcd-bench.ts, figures in the issue note):
 * etcd puts a watch whose start revision is already in the past into its
 * "unsynced" group, which is caught up by a loop every 100 ms. A per-call watch
 * from R + 1 on a busy cluster is exactly that, so a release landing soon after
 * the watch opens reaches the waiter up to 100 ms late. This watch is opened
 * once from the current revision (synced) and stays synced, so a DELETE reaches
 * the waiter in one event delivery, while the wait keeps R + 1 semantics:
 *
 * - every DELETE's revision is recorded per key (bounded, oldest evicted), so a
 *   waiter that registers after "its" release (the gap between the failed
 *   attempt at R and the registration) still sees a delete with revision > R;
 * - when the record cannot prove that (R predates the watch's start, or the
 *   key's entry may have been evicted), the waiter registers first and then
 *   reads the key: gone, or re-created after R, is a release it missed;
 * - PUT events are not delivered at all (renewals never wake anyone).
 *
 * If the watch disconnects or is cancelled (compaction while it was behind),
 * every waiter gets "fallback" and new waiters do too until it is back: core
 * then polls for the rest of its budget.
 */
import type { Etcd3, IKeyValue, Watcher } from 'etcd3';
import type { WaitResult } from '../spi.js';
import { range } from './etcd-client.js';
import type { KeyLayout } from './keys.js';
import { PendingWait, type AnchoredWaitRequest, type WaitStrategy } from './wait-request.js';

/** Keys whose last DELETE revision is remembered; older entries are evicted and raise `evictedFloor`. */
const MAX_DELETE_RECORDS = 8_192;

type WatchState = 'idle' | 'connected' | 'disconnected' | 'failed';

interface Registration {
  afterRevision: number;
  wait: PendingWait;
}

export class SharedReleaseWatch implements WaitStrategy {
  private watcher: Watcher | null = null;
  private state: WatchState = 'idle';
  private failure = 'shared watch not started';
  /** Deletes at or below this revision may be missing from `lastDelete` (before the watch, or evicted). */
  private evictedFloor = 0;
  private readonly lastDelete = new Map<string, number>();
  private readonly waiters = new Map<string, Set<Registration>>();
  private stopped = false;
  private restarting: Promise<void> | null = null;

  constructor(
    private readonly client: Etcd3,
    private readonly keys: KeyLayout,
  ) {}

  async start(): Promise<void> {
    this.stopped = false;
    await this.open();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.failAll('store closed');
    const watcher = this.watcher;
    this.watcher = null;
    this.state = 'idle';
    if (watcher) await watcher.cancel().catch(() => undefined);
  }

  /** Waiting calls (a wait registered under its key and its session counts once). */
  openWatchCount(): number {
    const waits = new Set<Registration>();
    for (const set of this.waiters.values()) for (const registration of set) waits.add(registration);
    return waits.size;
  }

  /** For tests and readiness: whether the shared watch is live. */
  get connected(): boolean {
    return this.state === 'connected';
  }

  async wait(request: AnchoredWaitRequest): Promise<WaitResult> {
    if (this.state !== 'connected') return { outcome: 'fallback', cause: this.failure };
    const after = Number(request.observedRevision);
    const watched = [this.keys.lock(request.key)];
    if (request.sessionId !== undefined) watched.push(this.keys.session(request.sessionId));
    for (const holder of request.holderSessionIds ?? []) watched.push(this.keys.session(holder));
    const names = watched.map((key) => key.toString('latin1'));

    // Gap race: the release may already have happened between the failed attempt and now.
    if (names.some((name) => (this.lastDelete.get(name) ?? 0) > after)) return { outcome: 'released' };

    const wait = new PendingWait(request.timeoutMillis, request.signal);
    const registration: Registration = { afterRevision: after, wait };
    for (const name of names) this.register(name, registration);
    try {
      if (after < this.evictedFloor) {
        // The record cannot vouch for (R, now]: look at the keys themselves (registered first, so nothing slips between).
        void this.readCheck(watched, after, wait);
      }
      return await wait.result;
    } finally {
      wait.dispose();
      for (const name of names) this.unregister(name, registration);
    }
  }

  private async readCheck(watched: Buffer[], after: number, wait: PendingWait): Promise<void> {
    try {
      for (const key of watched) {
        const response = await range(this.client, { key });
        const kv = response.kvs[0];
        if (!kv || Number(kv.create_revision) > after) {
          wait.finish({ outcome: 'released' });
          return;
        }
      }
    } catch (error) {
      wait.finish({ outcome: 'fallback', cause: `read check failed: ${String(error)}` });
    }
  }

  private register(name: string, registration: Registration): void {
    let set = this.waiters.get(name);
    if (!set) {
      set = new Set();
      this.waiters.set(name, set);
    }
    set.add(registration);
  }

  private unregister(name: string, registration: Registration): void {
    const set = this.waiters.get(name);
    if (!set) return;
    set.delete(registration);
    if (set.size === 0) this.waiters.delete(name);
  }

  private async open(): Promise<void> {
    const root = Buffer.from(this.keys.root);
    // No start revision: the watch begins at the current revision and is synced from its first moment.
    const watcher = this.client.watch().prefix(root).only('delete').watcher();
    this.watcher = watcher;
    watcher.on('delete', (kv: IKeyValue) => this.onDelete(kv));
    watcher.on('connected', (response) => {
      if (this.state === 'idle' || this.state === 'failed') {
        // A fresh watch sees only deletes after this revision; older ones are unknown to the record.
        this.evictedFloor = Math.max(this.evictedFloor, Number(response.header.revision));
      }
      this.state = 'connected';
    });
    watcher.on('disconnected', (error) => {
      // The library resumes from its last revision, but how soon is up to its backoff; meanwhile, poll.
      this.markDown('disconnected', `shared watch disconnected: ${error.message}`);
    });
    watcher.on('error', (error) => {
      this.markDown('failed', `shared watch cancelled: ${error.message}`);
      void this.restart();
    });
    await new Promise<void>((resolve, reject) => {
      watcher.once('connected', () => resolve());
      watcher.once('error', reject);
    });
  }

  private markDown(state: WatchState, cause: string): void {
    this.state = state;
    this.failure = cause;
    this.failAll(cause);
  }

  private async restart(): Promise<void> {
    if (this.stopped || this.restarting) return;
    this.restarting = (async () => {
      // The cancelled watcher is already detached by the library; cancelling it again would hang.
      this.watcher = null;
      while (!this.stopped) {
        try {
          await this.open();
          return;
        } catch (error) {
          this.failure = `shared watch cannot restart: ${String(error)}`;
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    })().finally(() => {
      this.restarting = null;
    });
    await this.restarting;
  }

  private onDelete(kv: IKeyValue): void {
    // The end of one grant of a multi-holder key (keys.ts) is a release of its lock key.
    const holder = this.keys.holderOf(kv.key);
    const name = (holder ? this.keys.lock(holder.key) : kv.key).toString('latin1');
    const revision = Number(kv.mod_revision);
    this.lastDelete.delete(name);
    this.lastDelete.set(name, revision);
    if (this.lastDelete.size > MAX_DELETE_RECORDS) {
      const oldest = this.lastDelete.entries().next();
      if (!oldest.done) {
        this.lastDelete.delete(oldest.value[0]);
        this.evictedFloor = Math.max(this.evictedFloor, oldest.value[1]);
      }
    }
    const set = this.waiters.get(name);
    if (!set) return;
    for (const registration of set) {
      if (revision > registration.afterRevision) registration.wait.finish({ outcome: 'released' });
    }
  }

  private failAll(cause: string): void {
    for (const set of this.waiters.values()) {
      for (const registration of set) registration.wait.finish({ outcome: 'fallback', cause });
    }
  }
}
