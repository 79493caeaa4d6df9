/**
 * The peers bench's knobs, from the environment (the same names as `npm run bench` where they
 * mean the same thing):
 *   BENCH_SECONDS (5)            measured seconds per cell
 *   BENCH_WARMUP_SECONDS (1)     warm-up before each cell's window (0 allowed)
 *   BENCH_CONCURRENCY (1,16,64)  uncontended cells: workers, each on its own key
 *   BENCH_HOT_WORKERS (64)       contended cells: workers…
 *   BENCH_HOT_KEYS (4)           …sharing this many keys (worker i on key i mod n); 0 skips them
 *   BENCH_WAIT_MILLIS (5000)     how long one contended acquire may wait or retry, on every system
 *   PEERS_SYSTEMS (all)          comma-separated ids to run only some rows (writes results/partial/)
 *   PEERS_ETCD_BACKOFF_MS (5,100) etcd3 recipe's retry backoff: first window, cap (full jitter)
 *   PEERS_ETCD_DATA_ROOT (the OS temp dir, on disk here) where both etcd members keep their data;
 *                                 /dev/shm reproduces the tests' tmpfs etcd, whose fsync is free
 *   HOLDFAST_RUNTIME (built dist/) dist | tsx: what the Holdfast servers run; unset, peers.ts builds
 *                                 dist/ first and runs it, as a production install would (compiled-build.ts)
 */
import { tmpdir } from 'node:os';
import type { Backoff } from './etcd-recipe.js';
import type { SystemId } from './system.js';

export const ALL_SYSTEMS: readonly SystemId[] = [
  'holdfast-embedded',
  'holdfast-postgres',
  'holdfast-etcd',
  'etcd3-lock',
  'pg-advisory',
  'redlock',
];

export interface PeersSettings {
  seconds: number;
  warmupSeconds: number;
  concurrencies: number[];
  hotWorkers: number;
  hotKeys: number;
  waitBudgetMillis: number;
  systems: SystemId[];
  /** True when PEERS_SYSTEMS picked some rows: the committed tables are left alone. */
  partial: boolean;
  etcdBackoff: Backoff;
  etcdDataRoot: string;
}

type Env = Record<string, string | undefined>;

function number(
  env: Env,
  name: string,
  fallback: number,
  { min, max = Number.MAX_SAFE_INTEGER, integer }: { min: number; max?: number; integer: boolean },
): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
    throw new Error(`${name} must be ${integer ? 'an integer' : 'a number'} in ${min}..${max}, got ${raw}`);
  }
  return value;
}

function integers(env: Env, name: string, fallback: string, min: number, max: number): number[] {
  return (env[name] ?? fallback).split(',').map((part) => {
    const value = Number(part.trim());
    if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name}: ${part} is not an integer in ${min}..${max}`);
    return value;
  });
}

export function peersSettings(env: Env = process.env): PeersSettings {
  const picked = env.PEERS_SYSTEMS?.trim();
  const systems = picked
    ? picked.split(',').map((id) => {
        const system = ALL_SYSTEMS.find((s) => s === id.trim());
        if (!system) throw new Error(`PEERS_SYSTEMS: unknown system ${id} (known: ${ALL_SYSTEMS.join(', ')})`);
        return system;
      })
    : [...ALL_SYSTEMS];
  const [baseMillis, capMillis] = integers(env, 'PEERS_ETCD_BACKOFF_MS', '5,100', 1, 60_000);
  if (baseMillis === undefined || capMillis === undefined || capMillis < baseMillis) {
    throw new Error('PEERS_ETCD_BACKOFF_MS must be "base,cap" with cap ≥ base');
  }
  return {
    seconds: number(env, 'BENCH_SECONDS', 5, { min: 0.1, integer: false }),
    warmupSeconds: number(env, 'BENCH_WARMUP_SECONDS', 1, { min: 0, integer: false }),
    concurrencies: integers(env, 'BENCH_CONCURRENCY', '1,16,64', 1, 256),
    hotWorkers: number(env, 'BENCH_HOT_WORKERS', 64, { min: 2, integer: true }),
    hotKeys: number(env, 'BENCH_HOT_KEYS', 4, { min: 0, integer: true }),
    // Holdfast's L4 waits at most 30 s (MAX_WAIT_MILLIS): the same budget must fit every system.
    waitBudgetMillis: number(env, 'BENCH_WAIT_MILLIS', 5000, { min: 100, max: 30_000, integer: true }),
    systems,
    partial: picked !== undefined && picked !== '' && systems.length < ALL_SYSTEMS.length,
    etcdBackoff: { baseMillis, capMillis },
    etcdDataRoot: env.PEERS_ETCD_DATA_ROOT?.trim() || tmpdir(),
  };
}
