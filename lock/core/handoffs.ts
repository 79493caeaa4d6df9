/**
 * Where a released key goes next. A release that handed the key to a recorded wait (FIFO
 * handoff, stores whose fleet `handsOff`) tells that wait here at once if it parks on this
 * instance (other instances hear it on the store's feed); any other release wakes the next
 * waiter here, who tries. A grant handed to a wait whose acquire has left is given back.
 */
import type { HeldLock, ReleaseResult, SessionCredential, LockStore } from '../store/spi.js';
import type { WaiterRegistry } from './waiters.js';

export class Handoffs {
  constructor(
    private readonly store: Pick<LockStore, 'release'>,
    private readonly waiters: WaiterRegistry,
  ) {}

  /** A release of `key` this instance made (or saw): its heir is told, or the next waiter here wakes. */
  released(key: string, result: Extract<ReleaseResult, { kind: 'released' }>): void {
    if (result.handedTo) this.waiters.handedOff(result.handedTo);
    else this.waiters.keyReleased(key);
  }

  /**
   * A grant a release handed to a wait whose acquire left without it (aborted, refused, its
   * record's end raced its deadline): given back at once so the key moves on, not at its TTL.
   * Quiet: no grant was ever answered or announced for it.
   */
  async giveBack(grant: HeldLock, session: SessionCredential): Promise<void> {
    try {
      const result = await this.store.release({ key: grant.key, session, fencingToken: grant.fencingToken });
      if (result.kind === 'released') this.released(grant.key, result);
    } catch {
      // The store is unreachable: the grant ends at its TTL or with its session.
    }
  }
}
