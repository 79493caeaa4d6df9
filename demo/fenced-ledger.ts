/**
 * The demo's protected resource: a payout ledger that accepts a write for a key
 * only with a fencing token at least as high as the highest it has seen. A
 * worker that lost its lock (crash, pause, revoke) and writes late is refused.
 */
import { fenced, FencedOutError, type FencingToken } from '../client/index.js';

export interface LedgerEntry {
  key: string;
  worker: string;
  token: FencingToken;
  amountCents: number;
}

export class FencedLedger {
  private readonly highest = new Map<string, FencingToken>();
  readonly entries: LedgerEntry[] = [];
  accepted = 0;
  refused = 0;

  /** Returns false (and records nothing) when a newer holder has already written. */
  write(entry: LedgerEntry): boolean {
    try {
      fenced(this.highest, entry.key, entry.token);
    } catch (error) {
      if (!(error instanceof FencedOutError)) throw error;
      this.refused += 1;
      return false;
    }
    this.accepted += 1;
    this.entries.push(entry);
    // Bounded: the demo runs for hours on a laptop.
    if (this.entries.length > 1000) this.entries.splice(0, this.entries.length - 1000);
    return true;
  }
}
