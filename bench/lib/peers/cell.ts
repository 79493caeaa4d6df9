/**
 * Runs one cell: `workers` closed-loop workers doing acquire → release on their keys for a
 * warm-up and then a measured window, in this process (the load generator: nothing else runs
 * here during a cell, so this process's CPU is the client side's).
 *
 * The window opens and closes on timers; the CPU snapshots are taken at those instants and
 * the cycles counted are those completing between them, so cycles, CPU and duration all
 * describe the same interval even when a busy machine fires the timers late.
 */
import { nodeCpuMillis } from '../cpu.js';
import type { Grant } from './fairness.js';
import type { CellMode, Held, PeerSystem } from './system.js';

export interface CellPlan {
  mode: CellMode;
  workers: number;
  /** Worker i's key. */
  keyOf(worker: number): string;
  warmupMillis: number;
  measureMillis: number;
  /** How long one acquire may wait for a held key; bounds the drain after the window. */
  waitBudgetMillis: number;
}

export interface CellMeasure {
  /** Acquire sent → release answered, for cycles completing inside the window. */
  latenciesMillis: number[];
  windowMillis: number;
  /** Failed cycles inside the window, by what failed (`not granted`, an error's name). */
  failures: Record<string, number>;
  /** Failed cycles outside it (warm-up, drain): reported in the JSON only. */
  failuresOutsideWindow: Record<string, number>;
  /** Every grant in grant order (hot cells only; empty otherwise). */
  grants: Grant[];
  clientCpuMillis: number;
  /** CPU in the window by server-side role. */
  serverCpuMillis: Record<string, number>;
}

/** After a thrown acquire, a worker pauses this long so a broken system cannot spin the load generator. */
const ERROR_PAUSE_MILLIS = 10;
/** Past the window, in-flight cycles get the wait budget and this much more to finish. */
const DRAIN_SLACK_MILLIS = 30_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function failureLabel(error: unknown): string {
  if (error instanceof Error) return error.name === 'Error' ? error.message.slice(0, 80) : error.name;
  return String(error);
}

function difference(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([role, ms]) => [role, ms - (before[role] ?? 0)]));
}

export async function runCell(system: PeerSystem, plan: CellPlan): Promise<CellMeasure> {
  const load = await system.open(plan.workers, plan.mode);
  const latenciesMillis: number[] = [];
  const failures: Record<string, number> = {};
  const failuresOutsideWindow: Record<string, number> = {};
  const grants: Grant[] = [];
  const trackGrants = plan.mode === 'hot';
  let measuring = false;
  let stopped = false;
  let windowStart = 0;
  let windowEnd = 0;
  let clientAtStart = 0;
  let clientAtEnd = 0;
  let serverAtStart: Record<string, number> = {};
  let serverAtEnd: Record<string, number> = {};

  // The /proc reads for the server side (a scan of every process for a PostgreSQL cluster) sit
  // outside the client's CPU readings, so they are not billed to the client.
  const openWindow = () => {
    serverAtStart = system.serverCpuMillis();
    clientAtStart = nodeCpuMillis();
    windowStart = performance.now();
    measuring = true;
  };
  const closeWindow = () => {
    windowEnd = performance.now();
    measuring = false;
    stopped = true;
    clientAtEnd = nodeCpuMillis();
    serverAtEnd = system.serverCpuMillis();
  };
  const fail = (label: string) => {
    const into = measuring ? failures : failuresOutsideWindow;
    into[label] = (into[label] ?? 0) + 1;
  };

  const worker = async (index: number) => {
    const key = plan.keyOf(index);
    while (!stopped) {
      const startedAt = performance.now();
      let held: Held | null;
      try {
        held = await load.acquire(index, key);
      } catch (error) {
        fail(`acquire: ${failureLabel(error)}`);
        await sleep(ERROR_PAUSE_MILLIS);
        continue;
      }
      if (held === null) {
        fail('not granted');
        continue;
      }
      if (trackGrants) grants.push({ key, worker: index, measured: measuring });
      try {
        await held.release();
      } catch (error) {
        fail(`release: ${failureLabel(error)}`);
        continue;
      }
      if (measuring) latenciesMillis.push(performance.now() - startedAt);
    }
  };

  const windowTimers: NodeJS.Timeout[] = [];
  try {
    if (plan.warmupMillis === 0) openWindow();
    else windowTimers.push(setTimeout(openWindow, plan.warmupMillis));
    windowTimers.push(setTimeout(closeWindow, plan.warmupMillis + plan.measureMillis));
    const workers = Promise.all(Array.from({ length: plan.workers }, (_, index) => worker(index)));
    const drainBound = plan.warmupMillis + plan.measureMillis + plan.waitBudgetMillis + DRAIN_SLACK_MILLIS;
    let bound: NodeJS.Timeout | undefined;
    const overdue = new Promise<never>((_, reject) => {
      bound = setTimeout(() => reject(new Error(`${system.label}: cycles still running ${drainBound} ms after the cell started`)), drainBound);
    });
    try {
      await Promise.race([workers, overdue]);
    } finally {
      clearTimeout(bound);
    }
  } finally {
    for (const timer of windowTimers) clearTimeout(timer);
    await load.close();
  }
  return {
    latenciesMillis,
    windowMillis: windowEnd - windowStart,
    failures,
    failuresOutsideWindow,
    grants,
    clientCpuMillis: clientAtEnd - clientAtStart,
    serverCpuMillis: difference(serverAtEnd, serverAtStart),
  };
}
