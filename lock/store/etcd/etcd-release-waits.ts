/**
 * The etcd store's revision-addressed waits for a release (ReleaseWaiter): the watch shape chosen
 * by `waitShape` (shared-release-watch.ts, per-call-release-watch.ts), anchored on the revision
 * of the acquire attempt that failed, and who held each key then.
 */
import type { Etcd3 } from 'etcd3';
import type { ReleaseWaiter, WaitResult } from '../spi.js';
import { range } from './etcd-client.js';
import type { EtcdContext } from './etcd-context.js';
import type { HolderMemory } from './etcd-grants.js';
import { PerCallReleaseWatch } from './per-call-release-watch.js';
import { isAnchor } from './holders.js';
import { decodeLock } from './records.js';
import { SharedReleaseWatch } from './shared-release-watch.js';
import type { EtcdWaitRequest, WaitStrategy } from './wait-request.js';

export type WaitShape = 'shared' | 'per-call';

const MAX_REMEMBERED_HOLDERS = 10_000;

export class EtcdReleaseWaits implements ReleaseWaiter, HolderMemory {
  /** Who held each key when an attempt here last failed on it, so that attempt's wait also ends with that session. */
  private readonly lastHolders = new Map<string, readonly string[]>();
  private waits: WaitStrategy | null = null;

  constructor(
    private readonly ctx: EtcdContext,
    private readonly shape: WaitShape,
  ) {}

  async start(client: Etcd3): Promise<void> {
    this.waits = this.shape === 'per-call' ? new PerCallReleaseWatch(client, this.ctx.keys) : new SharedReleaseWatch(client, this.ctx.keys);
    await this.waits.start();
  }

  async stop(): Promise<void> {
    await this.waits?.stop();
    this.waits = null;
  }

  /** Waits (and per-call etcd watches) open right now. */
  openWatchCount(): number {
    return this.waits?.openWatchCount() ?? 0;
  }

  async waitForRelease(req: EtcdWaitRequest): Promise<WaitResult> {
    const waits = this.waits;
    if (!waits) return { outcome: 'fallback', cause: 'store not initialised' };
    if (req.signal.aborted) return { outcome: 'aborted' };
    if (req.observedRevision !== undefined) {
      return waits.wait({ ...req, observedRevision: req.observedRevision, holderSessionIds: this.lastHolders.get(req.key) });
    }
    // No failed attempt to anchor on: anchor on now, and a key already free is a release.
    const response = await range(this.ctx.etcd(), { key: this.ctx.keys.lock(req.key) });
    const kv = response.kvs[0];
    if (!kv) return { outcome: 'released' };
    // A multi-holder key's anchor names no holder: the end of any of its grants wakes the wait.
    const holderSessionIds = isAnchor(kv) ? undefined : [decodeLock(req.key, kv).stored.sessionId];
    return waits.wait({ ...req, observedRevision: response.header.revision, holderSessionIds });
  }

  rememberHolders(key: string, sessionIds: readonly string[]): void {
    this.lastHolders.delete(key);
    this.lastHolders.set(key, sessionIds);
    if (this.lastHolders.size > MAX_REMEMBERED_HOLDERS) {
      const oldest = this.lastHolders.keys().next();
      if (!oldest.done) this.lastHolders.delete(oldest.value);
    }
  }
}
