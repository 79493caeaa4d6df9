/**
 * One payout worker: takes a batch lock, writes payouts through the fenced
 * ledger while the SDK renews the lock, releases. Now and then it "crashes"
 * while holding the lock (its network goes dead), so its session expires on the
 * server and the console shows session loss; then it restarts with a new session.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { LockClient, type LockSession } from '../client/index.js';
import type { FencedLedger } from './fenced-ledger.js';
import { PartitionableTransport } from './partitionable-transport.js';

export interface WorkerOptions {
  name: string;
  baseUrl: string;
  keys: readonly string[];
  ledger: FencedLedger;
  /** Chance per batch of crashing while holding the lock. */
  crashProbability: number;
  /** Session TTL: a crashed worker's session is lost this long after its last heartbeat. */
  sessionTtlMillis: number;
  /** Critical-section length range. */
  holdMillis: readonly [number, number];
  random: () => number;
  log: (line: string) => void;
  signal: AbortSignal;
}

function between(random: () => number, [lo, hi]: readonly [number, number]): number {
  return Math.round(lo + random() * (hi - lo));
}

export async function runWorker(o: WorkerOptions): Promise<void> {
  while (!o.signal.aborted) {
    const transport = new PartitionableTransport(o.baseUrl);
    const client = new LockClient({ transport, defaultPolicy: { waitMillis: 3_000, totalBudgetMillis: 8_000, maxAttempts: 6 } });
    let session: LockSession;
    try {
      session = await client.openSession({ owner: o.name, ttlMillis: o.sessionTtlMillis });
    } catch (error) {
      o.log(`${o.name}: cannot open a session (${(error as Error).message}); retrying in 2 s`);
      await sleep(2_000, undefined, { signal: o.signal }).catch(() => undefined);
      continue;
    }
    const crashed = await runSession(o, session, transport);
    if (crashed) {
      o.log(`${o.name}: crashed holding a lock; its session will expire in ${o.sessionTtlMillis / 1000} s`);
      // Stay dead past the session TTL so the server, not the worker, ends the session.
      await sleep(o.sessionTtlMillis + 3_000, undefined, { signal: o.signal }).catch(() => undefined);
      transport.heal();
      o.log(`${o.name}: restarted with a new session`);
    } else {
      await session.close().catch(() => undefined);
    }
  }
}

/** Runs batches until the demo stops (false) or the worker crashes (true). */
async function runSession(o: WorkerOptions, session: LockSession, transport: PartitionableTransport): Promise<boolean> {
  while (!o.signal.aborted && !session.lost) {
    const key = o.keys[Math.floor(o.random() * o.keys.length)]!;
    const crashNow = o.random() < o.crashProbability;
    try {
      await session.withLock(key, async (handle) => {
        const amountCents = between(o.random, [100, 500_000]);
        if (!o.ledger.write({ key, worker: o.name, token: handle.fencingToken, amountCents })) {
          o.log(`${o.name}: ledger refused token ${handle.fencingToken} on ${key}: a newer holder already wrote`);
          return;
        }
        if (crashNow) {
          transport.partition();
          throw new WorkerCrashed();
        }
        await sleep(between(o.random, o.holdMillis), undefined, { signal: AbortSignal.any([o.signal, handle.signal]) });
      });
    } catch (error) {
      if (error instanceof WorkerCrashed) return true;
      if (o.signal.aborted) return false;
      // Lost lock or session (e.g. an operator revoked it from the console): log and carry on.
      o.log(`${o.name}: ${(error as Error).message}`);
    }
    await sleep(between(o.random, [100, 600]), undefined, { signal: o.signal }).catch(() => undefined);
  }
  return false;
}

class WorkerCrashed extends Error {
  constructor() {
    super('worker crashed (demo)');
  }
}
