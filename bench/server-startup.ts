/**
 * `holdfast server` start-up time (spawn → first 200 from /readyz) and
 * resident memory (VmRSS once ready, and VmHWM, the peak), compiled (dist/ on
 * plain node) versus the TypeScript sources through tsx, on the PostgreSQL
 * store (a throwaway cluster) and the embedded store (PGlite in-process).
 * Needs `npm run build` first. Runs are interleaved so drift hits both alike.
 *
 *   npm run build && npm run bench:startup
 *   BENCH_RUNS=10 npm run bench:startup -- postgres
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../test/support/ports.js';
import { startPostgres, type PostgresCluster } from '../test/support/postgres.js';

type Runtime = 'dist' | 'tsx';
type StoreName = 'postgres' | 'embedded';
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const root = path.resolve(import.meta.dirname, '..');
const BIN = path.join(root, 'bin/holdfast.js');

interface Sample {
  readyMillis: number;
  rssMiB: number;
  peakMiB: number;
}

function memoryMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return kib / 1024;
}

async function startOnce(runtime: Runtime, env: Record<string, string>): Promise<Sample> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [BIN, 'server'], {
    env: { ...process.env, ...env, HOLDFAST_RUNTIME: runtime, HOLDFAST_PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`server exited: ${stderr}`);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false);
      if (ready) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const readyMillis = performance.now() - started;
    return { readyMillis, rssMiB: memoryMiB(child.pid!, 'VmRSS'), peakMiB: memoryMiB(child.pid!, 'VmHWM') };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  if (!existsSync(path.join(root, 'dist/cli/main.js'))) throw new Error('run `npm run build` first');
  const wanted = process.argv.slice(2) as StoreName[];
  const stores: StoreName[] = wanted.length > 0 ? wanted : ['postgres', 'embedded'];
  let cluster: PostgresCluster | undefined;
  const dataDirs: string[] = [];
  try {
    for (const store of stores) {
      // One data directory per store, reused: the embedded store's first start (initdb in WASM) is unmeasured.
      const dataDir = mkdtempSync(path.join(tmpdir(), 'holdfast-startup-'));
      dataDirs.push(dataDir);
      let env: Record<string, string> = { HOLDFAST_STORE: store, HOLDFAST_DATA_DIR: dataDir };
      if (store === 'postgres') {
        cluster ??= await startPostgres();
        env = { ...env, DATABASE_URL: await cluster.createDatabase() };
      }
      const samples: Record<Runtime, Sample[]> = { dist: [], tsx: [] };
      await startOnce('dist', env); // warm the page cache and the store once, unmeasured
      for (let run = 0; run < RUNS; run += 1) {
        for (const runtime of ['dist', 'tsx'] as const) samples[runtime].push(await startOnce(runtime, env));
      }
      for (const runtime of ['dist', 'tsx'] as const) {
        const s = samples[runtime];
        console.log(
          `${store.padEnd(8)} ${runtime.padEnd(4)} ready ${median(s.map((x) => x.readyMillis)).toFixed(0).padStart(5)} ms` +
            ` (min ${Math.min(...s.map((x) => x.readyMillis)).toFixed(0)}, max ${Math.max(...s.map((x) => x.readyMillis)).toFixed(0)})` +
            `  RSS ${median(s.map((x) => x.rssMiB)).toFixed(0).padStart(4)} MiB  peak ${median(s.map((x) => x.peakMiB)).toFixed(0).padStart(4)} MiB` +
            `  (median of ${s.length})`,
        );
      }
    }
  } finally {
    await cluster?.stop();
    for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
  }
}

await main();
