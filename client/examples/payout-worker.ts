/**
 * A payout worker using the Holdfast SDK — runnable:
 *
 *   node bin/holdfast.js server &                      # embedded store on :7070
 *   npx tsx client/examples/payout-worker.ts           # HOLDFAST_URL overrides the address
 *
 * It pays a few invoices, each under its own lock, and moves money between two
 * accounts under both accounts' locks. The ledger stands in for the protected
 * resource: it remembers the highest fencing token per key and refuses older
 * ones, so a worker that stalled past its lock cannot write over the next holder.
 */
import { Registry } from 'prom-client';
import { FencedOutError, LockClient, fenced, type LockHandle } from '../index.js';

/** The protected resource. In production this check lives in the database write. */
class Ledger {
  private readonly highestToken = new Map<string, string>();
  readonly entries: string[] = [];

  write(handle: LockHandle, entry: string): void {
    handle.signal.throwIfAborted(); // the lock was lost: stop before writing
    fenced(this.highestToken, handle.key, handle.fencingToken); // throws FencedOutError if stale
    this.entries.push(`${entry} (token ${handle.fencingToken})`);
  }
}

const baseUrl = process.env.HOLDFAST_URL ?? 'http://127.0.0.1:7070';
const registry = new Registry(); // the app's own registry; expose it on the app's /metrics
const client = new LockClient({ baseUrl, registry });
const ledger = new Ledger();

const session = await client.openSession({ ttlMillis: 15_000, owner: `payout-worker-${process.pid}` });
process.once('SIGINT', () => void session.close().finally(() => process.exit(130)));

try {
  for (const invoice of ['inv-1001', 'inv-1002', 'inv-1003']) {
    // Acquire, renew in the background while the callback runs, release in finally.
    const paid = await session.withLock(
      `payout:${invoice}`,
      async (handle) => {
        await callBank(invoice, handle.signal); // slow work: the SDK keeps the lock alive
        ledger.write(handle, `paid ${invoice}`);
        return true;
      },
      { ttlMillis: 10_000, policy: { totalBudgetMillis: 5_000 } },
    );
    console.log(paid === null ? `${invoice}: another worker holds it, skipped` : `${invoice}: paid`);
  }

  // Both accounts or neither, taken in canonical order so two workers moving money
  // in opposite directions cannot deadlock.
  const handles = await session.acquireAll(['account:bob', 'account:alice']);
  if (handles === null) {
    console.log('transfer: accounts busy, try later');
  } else {
    try {
      for (const handle of handles) ledger.write(handle, `transfer leg on ${handle.key}`);
      console.log('transfer: done');
    } finally {
      await session.releaseAll(handles);
    }
  }
} catch (error) {
  if (error instanceof FencedOutError) console.error('a stale holder was fenced out:', error.message);
  else throw error;
} finally {
  await session.close();
}

console.log(ledger.entries.join('\n'));
console.log((await registry.getSingleMetricAsString('lock_client_acquire_attempts')).split('\n').filter((l) => l.includes('_count')).join('\n'));

/** Stand-in for a call to the payment provider that honours cancellation. */
function callBank(invoice: string, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, 200);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
    void invoice;
  });
}
