/**
 * One seeded schedule: 5 clients on 2 keys against the FakeLockServer, with
 * random network delays (and rare multi-second spikes), dropped requests,
 * dropped responses, connection resets, holder pauses (a partition that heals)
 * and holder crashes (a partition that never heals, while the process keeps
 * believing whatever its SDK tells it). Everything — clock, network, client
 * jitter, workloads — derives from the seed, so a failing seed replays exactly.
 *
 * The invariant, checked after every instant of simulated time:
 *   1. no two clients hold a handle for the same key that is neither lost nor released;
 *   2. stronger: every such live handle is the server's current holder of its
 *      key, with the same session and token — the SDK never vouches for a lock
 *      the server has already let go.
 */
import { LockClient } from '../../../client/client.js';
import type { LockHandle } from '../../../client/handle.js';
import { ManualClock } from '../../../client/manual-clock.js';
import { seededRandom, type RandomSource } from '../../../client/random.js';
import type { LockSession } from '../../../client/session.js';
import { FakeLockServer } from './fake-lock-server.js';
import { FakeTransport, type Fault } from './fake-transport.js';

export const SIM_CLIENTS = 5;
export const SIM_KEYS = ['ledger', 'payouts'] as const;

export interface ScheduleReport {
  seed: number;
  violation: string | undefined;
  grants: number;
  lostHandles: number;
  lostSessions: number;
  crashes: number;
  steps: number;
  simulatedMillis: number;
}

interface Live {
  client: number;
  session: LockSession;
  handle: LockHandle;
}

export async function runSchedule(seed: number): Promise<ScheduleReport> {
  const rng = seededRandom(seed);
  const clock = new ManualClock(0);
  const server = new FakeLockServer(clock);
  const live = new Set<Live>();
  const report: ScheduleReport = {
    seed,
    violation: undefined,
    grants: 0,
    lostHandles: 0,
    lostSessions: 0,
    crashes: 0,
    steps: 0,
    simulatedMillis: 0,
  };
  const partitioned = Array.from({ length: SIM_CLIENTS }, () => false);

  const latency = (): number => (rng() < 0.03 ? 200 + Math.floor(rng() * 1_800) : 1 + Math.floor(rng() * 30));
  const fault = (client: number): Fault => {
    if (partitioned[client]) return 'drop_request';
    const roll = rng();
    return roll < 0.02 ? 'drop_response' : roll < 0.03 ? 'drop_request' : roll < 0.04 ? 'reset' : 'none';
  };

  const worker = async (client: number): Promise<void> => {
    const lockClient = new LockClient({
      transport: new FakeTransport(server, clock, { latency, fault: () => fault(client) }),
      clock,
      random: seededRandom(seed * 7919 + client),
      safetyMarginMillis: 200,
      requestTimeoutMillis: 600,
    });
    let session: LockSession;
    try {
      session = await lockClient.openSession({ ttlMillis: 1_000 + Math.floor(rng() * 2_000), owner: `c${client}` });
    } catch {
      return; // could not even open: nothing to believe
    }
    const rounds = 3 + Math.floor(rng() * 5);
    for (let round = 0; round < rounds && !session.lost; round += 1) {
      const key = SIM_KEYS[rng() < 0.5 ? 0 : 1]!;
      const ttlMillis = 1_000 + Math.floor(rng() * 2_000);
      const holdMillis = Math.floor(rng() * 2_500);
      const policy = { totalBudgetMillis: 4_000, baseBackoffMillis: 20, maxBackoffMillis: 500, maxAttempts: 12 };
      const work = async (handle: LockHandle): Promise<void> => {
        const entry: Live = { client, session, handle };
        live.add(entry);
        report.grants += 1;
        if (rng() < 0.15) scheduleTrouble(client);
        await clock.sleep(holdMillis, handle.signal).catch(() => {});
        if (handle.lost) report.lostHandles += 1;
        live.delete(entry);
      };
      try {
        const mode = rng();
        if (mode < 0.2) {
          // Both keys, in whatever order: acquireAll takes them canonically, all or nothing.
          const handles = await session.acquireAll(rng() < 0.5 ? [...SIM_KEYS] : [...SIM_KEYS].reverse(), {
            ttlMillis,
            policy,
          });
          if (handles) {
            await Promise.all(handles.map((handle) => work(handle)));
            await session.releaseAll(handles);
          }
        } else if (mode < 0.6) {
          await session.withLock(key, work, { ttlMillis, policy });
        } else {
          const handle = await session.acquire(key, { ttlMillis, policy });
          if (handle) {
            await work(handle);
            await session.release(handle);
          }
        }
      } catch {
        // Lost sessions, transport errors and release failures are expected under these faults.
      }
      await clock.sleep(Math.floor(rng() * 300));
    }
    if (session.lost) report.lostSessions += 1;
    await session.close().catch(() => {});
  };

  /** Pause (heals) or crash (never heals) a client, now or shortly. */
  const scheduleTrouble = (client: number): void => {
    const crash = rng() < 0.4;
    const startIn = Math.floor(rng() * 500);
    const lasts = 500 + Math.floor(rng() * 5_000);
    void clock.sleep(startIn).then(async () => {
      partitioned[client] = true;
      if (crash) {
        report.crashes += 1;
        return;
      }
      await clock.sleep(lasts);
      partitioned[client] = false;
    });
  };

  const check = (): void => {
    report.steps += 1;
    if (report.violation !== undefined) return;
    const byKey = new Map<string, Live[]>();
    for (const entry of live) {
      if (entry.handle.signal.aborted) continue;
      const list = byKey.get(entry.handle.key) ?? [];
      list.push(entry);
      byKey.set(entry.handle.key, list);
      const holder = server.holder(entry.handle.key);
      if (holder?.sessionId !== entry.session.sessionId || holder.token !== entry.handle.fencingToken) {
        report.violation =
          `t=${clock.now()}: client c${entry.client} believes it holds ${entry.handle.key} ` +
          `(token ${entry.handle.fencingToken}) but the server holder is ${JSON.stringify(holder)}`;
      }
    }
    for (const [key, entries] of byKey) {
      if (entries.length > 1) {
        report.violation = `t=${clock.now()}: clients ${entries.map((e) => `c${e.client}`).join(', ')} all hold ${key}`;
      }
    }
  };

  await clock.runUntilSettled(
    Promise.all(Array.from({ length: SIM_CLIENTS }, (_, i) => worker(i))),
    { maxMillis: 3_600_000, onStep: check },
  );
  report.simulatedMillis = clock.now();
  return report;
}

export function scheduleSeeds(base: number, count: number, random: RandomSource = seededRandom(base)): number[] {
  return Array.from({ length: count }, () => Math.floor(random() * 2 ** 31));
}
