/**
 * L8's holder feed on etcd (spi.ts HolderWatch): one etcd watch on the key's lock key (and the grant
 * keys of a multi-holder key, which sort right after it: keys.ts) per parked
 * watch, created before core reads the key (etcd3 resolves `create()` once the server confirmed the
 * watch), so any later write to it — a grant's create, a renew's or proclaim's put, a release's,
 * sweep's or revoke's delete — reaches it in one event delivery. Puts that change no holder wake
 * core to compare and park again. A watch that errors or disconnects answers `fallback`.
 */
import type { Etcd3, Watcher } from 'etcd3';
import type { HolderWatch, HolderWatchSubscription } from '../spi.js';
import type { KeyLayout } from './keys.js';

export class EtcdHolderWatch implements HolderWatch {
  constructor(
    private readonly etcd: () => Etcd3,
    private readonly keys: KeyLayout,
  ) {}

  async watch(req: { key: string }): Promise<HolderWatchSubscription> {
    // The lock key and the grant keys under it (a multi-holder key's, holders.ts): one range, one watch.
    const watcher = await this.etcd().watch().inRange(this.keys.lockRange(req.key)).create();
    let settle: (how: 'changed' | 'fallback') => void = () => {};
    const changed = new Promise<'changed' | 'fallback'>((resolve) => (settle = resolve));
    const onChange = () => settle('changed');
    const onLoss = () => settle('fallback');
    watcher.on('put', onChange);
    watcher.on('delete', onChange);
    watcher.on('error', onLoss);
    watcher.on('disconnected', onLoss);
    let stopped = false;
    return {
      changed,
      stop: () => {
        if (stopped) return;
        stopped = true;
        settle('fallback');
        cancelQuietly(watcher);
      },
    };
  }
}

function cancelQuietly(watcher: Watcher): void {
  watcher.removeAllListeners();
  // An error after cancel (the client closing) has no one left to tell.
  watcher.on('error', () => {});
  void watcher.cancel().catch(() => {});
}
