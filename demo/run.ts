/**
 * The demo workload `npm start` runs beside the server and console (off with
 * HOLDFAST_DEMO=0): payout workers contending on a few batch keys, writing
 * through a fenced ledger, with an occasional crash so session loss shows, and
 * one report job that holds its lock for a long time.
 *
 * Env: HOLDFAST_URL (http://127.0.0.1:7070), DEMO_WORKERS (5), DEMO_CRASH_PROBABILITY (0.02).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { LockClient } from '../client/index.js';
import { FencedLedger } from './fenced-ledger.js';
import { runWorker } from './worker.js';

const baseUrl = (process.env.HOLDFAST_URL ?? 'http://127.0.0.1:7070').replace(/\/+$/, '');
const workers = Math.min(Math.max(Number(process.env.DEMO_WORKERS ?? 5) || 5, 1), 20);
const crashProbability = Math.min(Math.max(Number(process.env.DEMO_CRASH_PROBABILITY ?? 0.02) || 0, 0), 1);
const PAYOUT_KEYS = ['payouts/batch-eu', 'payouts/batch-us', 'payouts/batch-apac'] as const;

const stop = new AbortController();
const log = (line: string) => process.stdout.write(`demo: ${line}\n`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => stop.abort());

/** A nightly report job holding one lock for a long time: the console flags it as long-held. */
async function runReportJob(): Promise<void> {
  while (!stop.signal.aborted) {
    try {
      const session = await new LockClient({ baseUrl }).openSession({ owner: 'nightly-report', ttlMillis: 10_000 });
      await session
        .withLock('reports/nightly', async (handle) => {
          await sleep(60 * 60_000, undefined, { signal: AbortSignal.any([stop.signal, handle.signal]) });
        })
        .catch((error: Error) => {
          if (!stop.signal.aborted) log(`nightly-report: ${error.message}`);
        });
      await session.close().catch(() => undefined);
    } catch (error) {
      if (!stop.signal.aborted) log(`nightly-report: ${(error as Error).message}`);
    }
    await sleep(5_000, undefined, { signal: stop.signal }).catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const ledger = new FencedLedger();
  log(`${workers} payout workers on ${PAYOUT_KEYS.join(', ')} against ${baseUrl}`);
  const running = [
    runReportJob(),
    ...Array.from({ length: workers }, (_, i) =>
      runWorker({
        name: `payout-worker-${i + 1}`,
        baseUrl,
        keys: PAYOUT_KEYS,
        ledger,
        crashProbability,
        sessionTtlMillis: 5_000,
        holdMillis: [400, 2_500],
        random: Math.random,
        log,
        signal: stop.signal,
      }),
    ),
  ];
  await Promise.allSettled(running);
  log(`stopped; ledger accepted ${ledger.accepted} writes, refused ${ledger.refused} stale ones`);
}

void main().then(() => process.exit(0));
