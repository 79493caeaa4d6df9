/**
 * Where a released key goes next. A release that handed the key to a recorded wait (FIFO
 * handoff, stores whose fleet `handsOff`) tells that wait here at once if it parks on this
 * instance (other instances hear it on the store's feed); any other release wakes the next
 * waiter here, who tries. A grant handed to a wait whose acquire has left stays with its
 * session (lock-service.ts says why): nothing here ends a grant its session did not end.
 */
import type { ReleaseResult } from '../store/spi.js';
import type { WaiterRegistry } from './waiters.js';

export class Handoffs {
  constructor(private readonly waiters: WaiterRegistry) {}

  /** A release of `key` this instance made (or saw): its heir is told, or the next waiter here wakes. */
  released(key: string, result: Extract<ReleaseResult, { kind: 'released' }>): void {
    if (result.handedTo) this.waiters.handedOff(result.handedTo);
    else this.waiters.keyReleased(key);
  }
}
