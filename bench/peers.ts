/**
 * `npm run bench:peers` — issue 22: Holdfast as its users take locks (the TypeScript SDK, against
 * a `holdfast server` process on each store) beside the locks they would otherwise reach for:
 * etcd3's `client.lock()` recipe, `pg_advisory_lock` on a `pg` pool, and Redlock v5 on one Redis
 * (Debian's redis-server, installed by the bench when missing). One run, one load-generator
 * process (this one), cells interleaved (for each concurrency, every system in turn), each
 * system on its own server processes and on its defaults (PostgreSQL with fsync on).
 *
 * Uncontended: acquire+release, each worker its own key, at BENCH_CONCURRENCY. Contended:
 * BENCH_HOT_WORKERS workers on BENCH_HOT_KEYS keys; Holdfast waits server-side, pg_advisory_lock
 * blocks in PostgreSQL, the etcd3 recipe and Redlock retry as their users would. Client CPU per
 * cycle is this process's; server CPU per cycle adds up the system's server processes, read from
 * /proc around each measured window. Knobs: bench/lib/peers/settings.ts.
 *
 * Prints the tables and a table of what each system guarantees; writes
 * bench/results/peers-<date>.json and the generated section of bench/results/peers.md.
 */
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { writeJson, writeMarkdownSection } from './lib/report.js';
import { useCompiledBuild } from './lib/compiled-build.js';
import { runCell } from './lib/peers/cell.js';
import { Cleanup } from './lib/peers/cleanup.js';
import { cellFigures, type PeerCell } from './lib/peers/figures.js';
import { GUARANTEES } from './lib/peers/guarantees.js';
import { contendedTable, guaranteesTable, recipeComparison, uncontendedTable } from './lib/peers/render.js';
import { peersSettings } from './lib/peers/settings.js';
import { startSystems } from './lib/peers/setup.js';
import type { CellMode, PeerSystem } from './lib/peers/system.js';

const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));
const KNOBS = ['BENCH_SECONDS', 'BENCH_WARMUP_SECONDS', 'BENCH_CONCURRENCY', 'BENCH_HOT_WORKERS', 'BENCH_HOT_KEYS', 'BENCH_WAIT_MILLIS', 'PEERS_SYSTEMS', 'PEERS_ETCD_BACKOFF_MS', 'PEERS_ETCD_DATA_ROOT', 'HOLDFAST_RUNTIME'];

const settings = peersSettings();
const loadAverage = () => os.loadavg().map((v) => Number(v.toFixed(2))) as [number, number, number];
/** The command as run, knobs included, so a table never passes for a default run it was not. */
const command = [...KNOBS.filter((k) => process.env[k]).map((k) => `${k}=${process.env[k]}`), 'npm run bench:peers'].join(' ');

let cellNumber = 0;

async function measure(system: PeerSystem, mode: CellMode, workers: number, hotKeys: number): Promise<PeerCell> {
  // A fresh key space per cell: no cell inherits another's rows, leases or queue.
  const prefix = `peers-${++cellNumber}-`;
  const keyOf = mode === 'own' ? (worker: number) => `${prefix}own-${worker}` : (worker: number) => `${prefix}hot-${worker % hotKeys}`;
  const raw = await runCell(system, {
    mode,
    workers,
    keyOf,
    warmupMillis: settings.warmupSeconds * 1000,
    measureMillis: settings.seconds * 1000,
    waitBudgetMillis: settings.waitBudgetMillis,
  });
  const cell = cellFigures({ system: system.id, label: system.label, mode, workers, ...(mode === 'hot' ? { hotKeys } : {}) }, raw, os.loadavg()[0]!);
  const failed = Object.values(cell.failures).reduce((a, b) => a + b, 0);
  const fairness = cell.lastReleaserShare === undefined ? '' : `  last releaser ${(cell.lastReleaserShare * 100).toFixed(1)} %`;
  console.log(
    `  ${mode === 'own' ? `c=${String(workers).padEnd(3)}` : 'hot  '} ${system.label.padEnd(28)} ${cell.cyclesPerSecond.toFixed(0).padStart(6)} cycles/s` +
      `  p50 ${cell.p50Millis.toFixed(2)} ms  p99 ${cell.p99Millis.toFixed(2)} ms  failed ${failed}` +
      `  CPU ms/cycle client ${cell.clientCpuMillisPerCycle.toFixed(3)} server ${cell.serverCpuMillisPerCycle.toFixed(3)}${fairness}`,
  );
  return cell;
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const loadAtStart = loadAverage();
  const cpus = os.cpus();
  console.log(`Holdfast peers bench — ${startedAt.toISOString()}`);
  console.log(`machine: ${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, node ${process.version}`);
  console.log(`load average at start (1/5/15 min): ${loadAtStart.join(' / ')}  (shared machine: other work distorts cycles/s more than CPU per cycle)`);
  console.log(`cells: ${settings.warmupSeconds} s warm-up + ${settings.seconds} s measured; systems: ${settings.systems.join(', ')}`);

  const cleanup = new Cleanup();
  cleanup.stopOnSignals();
  const uncontended: PeerCell[] = [];
  const contended: PeerCell[] = [];
  let environment: Record<string, string> = {};
  try {
    // Holdfast's servers run as a production install does (compiled-build.ts).
    console.log(`\nholdfast servers run ${useCompiledBuild()}`);
    console.log('starting the servers (each system its own)…');
    const started = await startSystems(settings, cleanup);
    environment = started.environment;
    for (const [what, how] of Object.entries(environment)) console.log(`  ${what}: ${how}`);

    console.log('\nUncontended: acquire+release, each worker its own key.');
    for (const workers of settings.concurrencies) {
      for (const system of started.systems) uncontended.push(await measure(system, 'own', workers, 0));
    }
    if (settings.hotKeys > 0) {
      console.log(`\nContended: ${settings.hotWorkers} workers on ${settings.hotKeys} hot keys, each acquire may wait or retry up to ${settings.waitBudgetMillis} ms.`);
      for (const system of started.systems) contended.push(await measure(system, 'hot', settings.hotWorkers, settings.hotKeys));
    }
  } finally {
    console.log('\nstopping every server the bench started…');
    await cleanup.run();
  }

  const loadAtEnd = loadAverage();
  const finishedAt = new Date();
  const comparison = recipeComparison(uncontended);
  const guarantees = GUARANTEES.filter((g) => settings.systems.includes(g.system));
  const sections = [
    `### Uncontended — acquire+release, each worker its own key\n\n${uncontendedTable(uncontended)}` + (comparison.length > 0 ? `\n\n${comparison.join('\n')}` : ''),
    ...(contended.length > 0
      ? [
          `### Contended — ${settings.hotWorkers} workers on ${settings.hotKeys} hot keys (worker i on key i mod ${settings.hotKeys}); an acquire may wait or retry up to ${settings.waitBudgetMillis} ms\n\n${contendedTable(contended)}`,
        ]
      : []),
  ];
  // The console gets the short answers; peers.md each answer with its reason.
  console.log(`\n### What each guarantees\n\n${guaranteesTable(guarantees)}\n\n${sections.join('\n\n')}\n`);
  console.log(`load average at end (1/5/15 min): ${loadAtEnd.join(' / ')}`);

  const date = startedAt.toISOString().slice(0, 10);
  const jsonFile = settings.partial
    ? `${RESULTS_DIR}partial/peers-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`
    : `${RESULTS_DIR}peers-${date}.json`;
  writeJson(jsonFile, {
    benchmark: 'peers (issue 22)',
    command,
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    settings,
    machine: { cpus: cpus.length, cpuModel: cpus[0]?.model, node: process.version, loadAverageStart: loadAtStart, loadAverageEnd: loadAtEnd },
    environment,
    guarantees: GUARANTEES,
    uncontended,
    contended,
  });
  if (settings.partial) {
    console.log(`wrote ${jsonFile} (PEERS_SYSTEMS run: peers.md untouched)`);
    return;
  }
  writeMarkdownSection(
    `${RESULTS_DIR}peers.md`,
    'Holdfast beside its peers (issue 22)',
    [
      `## Latest run — ${startedAt.toISOString()}`,
      '',
      `Command: \`${command}\` (${settings.warmupSeconds} s warm-up + ${settings.seconds} s measured per cell; cells interleaved: for each concurrency every system in turn, then the contended cells). Raw JSON: \`bench/results/peers-${date}.json\`.`,
      '',
      `Machine: ${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, node ${process.version}. **Load average (1/5/15 min): ${loadAtStart.join(' / ')} at start, ${loadAtEnd.join(' / ')} at end.**`,
      '',
      'Servers (each system its own):',
      '',
      ...Object.entries(environment).map(([what, how]) => `- ${what}: ${how}`),
      '',
      `### What each guarantees\n\n${guaranteesTable(guarantees, true)}`,
      '',
      ...sections.flatMap((s) => [s, '']),
    ].join('\n'),
  );
  console.log(`wrote ${jsonFile} and ${RESULTS_DIR}peers.md`);
}

await main();
