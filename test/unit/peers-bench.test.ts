/**
 * The peers bench's pure parts (`npm run bench:peers`, bench/lib/peers/): fairness figures from
 * grant order, per-cycle figures, the rendered tables, the knobs, the etcd3 recipe's backoff,
 * and the cell runner itself against two in-memory locks, a FIFO queue and a "retry later"
 * lock that lets the releaser straight back in.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { runCell, type CellMeasure } from '../../bench/lib/peers/cell.js';
import { fullJitterMillis } from '../../bench/lib/peers/etcd-recipe.js';
import { lastReleaserShare, winSpread, type Grant } from '../../bench/lib/peers/fairness.js';
import { cellFigures } from '../../bench/lib/peers/figures.js';
import { GUARANTEES } from '../../bench/lib/peers/guarantees.js';
import { contendedTable, guaranteesTable, recipeComparison, uncontendedTable } from '../../bench/lib/peers/render.js';
import { peersSettings } from '../../bench/lib/peers/settings.js';
import type { Held, PeerLoad, PeerSystem } from '../../bench/lib/peers/system.js';

const g = (key: string, worker: number, measured = true): Grant => ({ key, worker, measured });

describe('last-releaser share', () => {
  test('counts a grant that goes back to the previous holder of the same key', () => {
    // key a: 0, 0, 1, 1, 1 → grants 2..5 have a predecessor; 0→0, 1→1, 1→1 are repeats (3 of 4)
    const share = lastReleaserShare([g('a', 0), g('a', 0), g('a', 1), g('a', 1), g('a', 1)]);
    expect(share).toEqual({ counted: 4, toLastReleaser: 3, share: 0.75 });
  });

  test('keys are followed separately: interleaved keys do not make a repeat', () => {
    const share = lastReleaserShare([g('a', 0), g('b', 0), g('a', 1), g('b', 1), g('a', 0), g('b', 0)]);
    expect(share).toEqual({ counted: 4, toLastReleaser: 0, share: 0 });
  });

  test('warm-up grants are predecessors but are not counted themselves', () => {
    const share = lastReleaserShare([g('a', 3, false), g('a', 3, false), g('a', 3), g('a', 2)]);
    expect(share).toEqual({ counted: 2, toLastReleaser: 1, share: 0.5 });
  });

  test('nothing measured: NaN, not 0 % (no claim of fairness from no data)', () => {
    expect(lastReleaserShare([g('a', 1)]).share).toBeNaN();
  });

  test('win spread covers workers that never won', () => {
    expect(winSpread([g('a', 0), g('a', 0), g('a', 2), g('a', 1, false)], 4)).toEqual({ min: 0, max: 2 });
    expect(winSpread([g('a', 0), g('b', 1)], 2)).toEqual({ min: 1, max: 1 });
  });
});

function measure(overrides: Partial<CellMeasure> = {}): CellMeasure {
  return {
    latenciesMillis: [4, 1, 3, 2],
    windowMillis: 2000,
    failures: {},
    failuresOutsideWindow: {},
    grants: [],
    clientCpuMillis: 2,
    serverCpuMillis: { 'holdfast server': 6, postgres: 2 },
    ...overrides,
  };
}

describe('cell figures', () => {
  test('rates over the real window, CPU per counted cycle, server CPU split by process', () => {
    const cell = cellFigures({ system: 'holdfast-postgres', label: 'Holdfast/postgres (SDK)', mode: 'own', workers: 4 }, measure(), 3.5);
    expect(cell.cycles).toBe(4);
    expect(cell.cyclesPerSecond).toBe(2);
    expect(cell.p50Millis).toBe(2);
    expect(cell.p99Millis).toBe(4);
    expect(cell.clientCpuMillisPerCycle).toBe(0.5);
    expect(cell.serverCpuMillisPerCycle).toBe(2);
    expect(cell.serverCpuSplit).toEqual({ 'holdfast server': 1.5, postgres: 0.5 });
    expect(cell.lastReleaserShare).toBeUndefined();
  });

  test('hot cells carry the fairness figures', () => {
    const grants = [g('k', 0), g('k', 0), g('k', 1)];
    const cell = cellFigures({ system: 'redlock', label: 'Redlock', mode: 'hot', workers: 3, hotKeys: 1 }, measure({ grants }), 1);
    expect(cell.lastReleaserShare).toBe(0.5);
    expect(cell.winsPerWorker).toEqual({ min: 0, max: 2 });
  });

  test('no cycles: per-cycle figures are NaN and render as a dash', () => {
    const cell = cellFigures({ system: 'redlock', label: 'Redlock', mode: 'own', workers: 1 }, measure({ latenciesMillis: [], failures: { 'not granted': 3 } }), 1);
    expect(cell.clientCpuMillisPerCycle).toBeNaN();
    const row = uncontendedTable([cell]).split('\n')[2]!;
    expect(row).toContain('3× not granted');
    expect(row).toMatch(/\| — +\| — +\|/);
  });
});

describe('rendering', () => {
  const own = (system: 'holdfast-postgres' | 'etcd3-lock', label: string, workers: number, latency: number, count: number) =>
    cellFigures({ system, label, mode: 'own', workers }, measure({ latenciesMillis: new Array(count).fill(latency), windowMillis: 1000 }), 2);

  test('the uncontended table has a row per cell with its figures and the CPU split', () => {
    const text = uncontendedTable([own('holdfast-postgres', 'Holdfast/postgres (SDK)', 16, 2, 1000)]);
    const [header, rule, row] = text.split('\n');
    expect(header).toContain('client CPU ms/cycle');
    expect(rule).toMatch(/^\|-+\|/);
    expect(row).toMatch(/^\| 16 +\| Holdfast\/postgres \(SDK\) +\| 1000 +\| 2\.00 +\| 2\.00 +\| 0 +\| 0\.002 +\| 0\.008 +\| holdfast server 0\.006 \+ postgres 0\.002/);
  });

  test('the contended table shows the last-releaser share as a percentage and the win spread', () => {
    const grants = [g('k', 0), g('k', 1), g('k', 1), g('k', 0), g('k', 2)];
    const cell = cellFigures({ system: 'pg-advisory', label: 'pg_advisory_lock', mode: 'hot', workers: 4, hotKeys: 1 }, measure({ grants }), 1);
    const row = contendedTable([cell]).split('\n')[2]!;
    expect(row).toContain('25.0 %');
    expect(row).toContain('0–2');
  });

  test('Holdfast against the etcd3 recipe: cycles/s ratio per concurrency, p50 ratio at c=1', () => {
    const lines = recipeComparison([
      own('holdfast-postgres', 'Holdfast/postgres (SDK)', 1, 2, 500),
      own('etcd3-lock', 'etcd3 client.lock()', 1, 4, 250),
      own('holdfast-postgres', 'Holdfast/postgres (SDK)', 64, 1, 3000),
      own('etcd3-lock', 'etcd3 client.lock()', 64, 1, 1000),
    ]);
    expect(lines).toEqual([
      'c=1, against etcd3 client.lock(): Holdfast/postgres (SDK) 2.00× the cycles/s, p50 0.50× its p50.',
      'c=64, against etcd3 client.lock(): Holdfast/postgres (SDK) 3.00× the cycles/s.',
    ]);
  });

  test('the guarantees table: a row per system, the five columns, reasons only when detailed', () => {
    const short = guaranteesTable(GUARANTEES).split('\n');
    expect(short[0]).toMatch(/^\| system +\| durable +\| fenced +\| fair +\| sessions +\| survives a server loss +\|$/);
    expect(short).toHaveLength(2 + GUARANTEES.length);
    const redlock = short.find((line) => line.includes('Redlock'))!;
    expect(redlock.split('|').slice(2, -1).map((c) => c.trim())).toEqual(['no', 'no', 'no', 'no', 'no']);
    const postgres = short.find((line) => line.includes('postgres store'))!;
    expect(postgres.split('|').slice(2, -1).map((c) => c.trim())).toEqual(['yes', 'yes', 'yes', 'yes', 'yes']);
    expect(guaranteesTable(GUARANTEES, true)).toContain('fsync off (`-F`)');
  });

  test("the README's guarantees table is the one the bench prints", () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    expect(readme).toContain(guaranteesTable(GUARANTEES));
  });
});

describe('knobs', () => {
  test('defaults: 5 s cells after 1 s, c = 1/16/64, 64 workers on 4 hot keys, every system', () => {
    const settings = peersSettings({});
    expect(settings).toMatchObject({ seconds: 5, warmupSeconds: 1, concurrencies: [1, 16, 64], hotWorkers: 64, hotKeys: 4, waitBudgetMillis: 5000, partial: false });
    expect(settings.systems).toHaveLength(6);
    expect(settings.etcdBackoff).toEqual({ baseMillis: 5, capMillis: 100 });
  });

  test('a short run and a subset of systems; bad values are refused by name', () => {
    const settings = peersSettings({ BENCH_SECONDS: '2', BENCH_WARMUP_SECONDS: '0', PEERS_SYSTEMS: 'redlock, pg-advisory' });
    expect(settings).toMatchObject({ seconds: 2, warmupSeconds: 0, systems: ['redlock', 'pg-advisory'], partial: true });
    expect(() => peersSettings({ PEERS_SYSTEMS: 'zookeeper' })).toThrow(/PEERS_SYSTEMS/);
    expect(() => peersSettings({ BENCH_WAIT_MILLIS: '60000' })).toThrow(/BENCH_WAIT_MILLIS/);
    expect(() => peersSettings({ BENCH_CONCURRENCY: '1,x' })).toThrow(/BENCH_CONCURRENCY/);
  });

  test("the etcd3 recipe's backoff: full jitter within a doubling window, capped", () => {
    const backoff = { baseMillis: 5, capMillis: 100 };
    expect(fullJitterMillis(0, backoff, () => 0.999)).toBe(5);
    expect(fullJitterMillis(2, backoff, () => 0.999)).toBe(20);
    expect(fullJitterMillis(10, backoff, () => 0.999)).toBe(100);
    expect(fullJitterMillis(10, backoff, () => 0)).toBe(0);
  });
});

/** Resolves on a later turn of the event loop, so the runner's window timers can fire between steps. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** An in-memory lock that hands each release to the longest waiter (a queue, like pg_advisory_lock). */
function fifoSystem(): PeerSystem {
  const holders = new Map<string, Array<() => void> | undefined>();
  return {
    id: 'pg-advisory',
    label: 'in-memory FIFO',
    serverCpuMillis: () => ({}),
    async open(): Promise<PeerLoad> {
      return {
        async acquire(_worker, key) {
          const queue = holders.get(key);
          if (queue === undefined) holders.set(key, []);
          else await new Promise<void>((granted) => queue.push(granted));
          await nextTurn();
          const held: Held = {
            async release() {
              await nextTurn();
              const next = holders.get(key)!.shift();
              if (next) next();
              else holders.delete(key);
            },
          };
          return held;
        },
        close: async () => {},
      };
    },
  };
}

/** A try-lock whose losers sleep and retry (like Redlock): the releaser asks again at once and wins. */
function retryLaterSystem(budgetMillis: number): PeerSystem {
  const held = new Set<string>();
  return {
    id: 'redlock',
    label: 'in-memory retry-later',
    serverCpuMillis: () => ({}),
    async open(): Promise<PeerLoad> {
      return {
        async acquire(_worker, key) {
          const deadline = performance.now() + budgetMillis;
          while (held.has(key)) {
            if (performance.now() > deadline) return null;
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
          held.add(key);
          await nextTurn();
          return {
            async release() {
              await nextTurn();
              held.delete(key);
            },
          };
        },
        close: async () => {},
      };
    },
  };
}

describe('the cell runner', () => {
  const plan = { mode: 'hot' as const, workers: 4, keyOf: () => 'k', warmupMillis: 50, measureMillis: 300, waitBudgetMillis: 60 };

  test('a FIFO lock: every cycle counted in the window, no grant back to the last releaser, wins even', async () => {
    const raw = await runCell(fifoSystem(), plan);
    const cell = cellFigures({ system: 'pg-advisory', label: 'fifo', mode: 'hot', workers: 4, hotKeys: 1 }, raw, 0);
    expect(cell.cycles).toBeGreaterThan(20);
    expect(cell.cyclesPerSecond).toBeCloseTo(cell.cycles / (raw.windowMillis / 1000), 6);
    // Grants are stamped when granted, cycles when released: only a cycle straddling an edge of the window differs.
    expect(Math.abs(raw.grants.filter((grant) => grant.measured).length - cell.cycles)).toBeLessThanOrEqual(2);
    expect(cell.failures).toEqual({});
    expect(cell.lastReleaserShare).toBe(0);
    expect(cell.winsPerWorker!.max - cell.winsPerWorker!.min).toBeLessThanOrEqual(1);
  });

  test('a retry-later lock: the releaser keeps winning and the sleepers give up', async () => {
    const raw = await runCell(retryLaterSystem(plan.waitBudgetMillis), plan);
    const cell = cellFigures({ system: 'redlock', label: 'retry later', mode: 'hot', workers: 4, hotKeys: 1 }, raw, 0);
    expect(cell.cycles).toBeGreaterThan(20);
    expect(cell.lastReleaserShare).toBeGreaterThan(0.9);
    expect(cell.winsPerWorker!.min).toBe(0);
    expect(cell.failures['not granted']).toBeGreaterThan(0);
  });

  test('an acquire that throws is a failure by name, and the cell still ends', async () => {
    const broken: PeerSystem = {
      id: 'etcd3-lock',
      label: 'broken',
      serverCpuMillis: () => ({ etcd: 0 }),
      open: async () => ({
        acquire: async () => {
          throw new TypeError('no route');
        },
        close: async () => {},
      }),
    };
    const raw = await runCell(broken, { ...plan, mode: 'own', warmupMillis: 0, measureMillis: 100 });
    expect(raw.latenciesMillis).toEqual([]);
    expect(raw.failures['acquire: TypeError']).toBeGreaterThan(0);
    expect(raw.serverCpuMillis).toEqual({ etcd: 0 });
  });
});
