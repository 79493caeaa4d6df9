/**
 * `npm run bench` — issue 2, criterion 13: acquire+release cycles per second
 * through Holdfast's HTTP surface at concurrency 1, 16 and 64, with p50/p99
 * cycle latency, on the `postgres` and `embedded` stores, beside the raw
 * backend doing the same work directly (INSERT … ON CONFLICT DO NOTHING
 * RETURNING + DELETE from a `pg` pool as large as the concurrency) against the
 * same throwaway PostgreSQL, in the same run.
 *
 * Main table: every worker has its own session and its own key, so no cycle
 * contends. Each store has two rows: `http-*`, a minimal keep-alive HTTP client
 * (plain HTTP), and `sdk-*`, the same cycles through @holdfast/client as an
 * application takes locks (issue 22); a table puts each SDK row beside its
 * plain-HTTP row, with the client thread's CPU per cycle. Two diagnostic rows per concurrency split the gap: Holdfast's SQL
 * store called directly (no HTTP), and the raw work through a multi-row
 * coalescing prototype (bench/lib/statement-batcher.ts). Second table:
 * workers share a few hot keys and wait server-side.
 *
 * Bounded: each cell runs BENCH_WARMUP_SECONDS (default 1) + BENCH_SECONDS
 * (default 5); loopback only. Knobs: BENCH_SECONDS, BENCH_WARMUP_SECONDS,
 * BENCH_CONCURRENCY (default "1,16,64"), BENCH_HOT_KEYS (default 4; 0 skips
 * the contended table), BENCH_WAIT_MILLIS (default 5000), BENCH_HTTP_CLIENT
 * (`lean`, default: a minimal keep-alive HTTP/1.1 client; `node`: node:http with
 * a keep-alive agent), BENCH_DIAGNOSTICS (default 1; 0 skips the store-direct,
 * coalescing-prototype and unbatched-etcd rows), BENCH_ETCD_CONCURRENCY (default
 * "16,64"; empty skips the etcd table). A closer look at etcd (RPCs and raft
 * proposals per cycle, a trivial client's ceiling): `npm run bench:etcd-http`.
 * BENCH_CEILING (default 1; 0 skips the bare-node-http and bare-fastify rows:
 * canned answers with no store, the ceiling any HTTP design reaches beside the
 * load generator), BENCH_ONLY (comma-separated path names, e.g.
 * "raw-postgres,http-postgres": only those uncontended rows; contended, handoff
 * and etcd tables are governed by their own knobs; such a run writes
 * bench/results/partial/ and leaves foundation.md alone). With BENCH_DIAGNOSTICS,
 * `sdk-fetch-postgres` runs the SDK on its old FetchTransport (the global fetch), `sdk-nodehttp-postgres`
 * on NodeHttpTransport (node:http, its http: default before stop 42).
 *
 * Multi-holder keys (issue 23): every worker on one key through the SDK, a semaphore
 * (`sdk-semaphore-*`, limit BENCH_SEMAPHORE_LIMIT, default 8) or shared grants (`sdk-shared-*`,
 * readers only), waiting server-side up to BENCH_WAIT_MILLIS; on embedded, postgres and (with the
 * etcd table) etcd, at concurrency BENCH_PRIMITIVES_CONCURRENCY (default 64; 0 skips them). A
 * BENCH_ONLY run includes them only when it names them.
 *
 * Writes bench/results/foundation-<date>.json and the generated section of
 * bench/results/foundation.md.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { startPostgres } from '../test/support/postgres.js';
import type { HttpClientKind, KeyPattern, LoadTarget, LoadTask, SdkTransportKind } from './lib/load-task.js';
import { createRawSchema } from './lib/raw-backend.js';
import {
  cellTable,
  ratios,
  ratioTable,
  sdkComparisons,
  sdkComparisonTable,
  writeJson,
  writeMarkdownSection,
  type CellResult,
  type PathName,
} from './lib/report.js';
import { runLoad } from './lib/run-load.js';
import { startBareFastifyServer, startBareNodeHttpServer } from './lib/bare-servers.js';
import { startEmbeddedServer, startEtcdServer, startPostgresServer, type BenchServer } from './lib/servers.js';
import { startEtcd } from '../test/support/etcd.js';
import { percentile } from './lib/stats.js';
import { summarise } from './lib/stats.js';

function positiveNumber(name: string, fallback: number, allowZero = false): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) throw new Error(`${name} must be a positive number, got ${raw}`);
  return value;
}

const SECONDS = positiveNumber('BENCH_SECONDS', 5);
const WARMUP_SECONDS = positiveNumber('BENCH_WARMUP_SECONDS', 1, true);
const CONCURRENCIES = (process.env.BENCH_CONCURRENCY ?? '1,16,64').split(',').map((part) => {
  const value = Number(part.trim());
  if (!Number.isInteger(value) || value < 1 || value > 256) throw new Error(`BENCH_CONCURRENCY: bad value ${part}`);
  return value;
});
const HOT_KEYS = positiveNumber('BENCH_HOT_KEYS', 4, true);
const WAIT_MILLIS = positiveNumber('BENCH_WAIT_MILLIS', 5000);
const HTTP_CLIENT = (process.env.BENCH_HTTP_CLIENT ?? 'lean') as HttpClientKind;
if (HTTP_CLIENT !== 'lean' && HTTP_CLIENT !== 'node') throw new Error(`BENCH_HTTP_CLIENT must be lean or node, got ${HTTP_CLIENT}`);
const DIAGNOSTICS = process.env.BENCH_DIAGNOSTICS !== '0';
const CEILING = process.env.BENCH_CEILING !== '0';
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',').map((p) => p.trim())) : null;
const HANDOFF_WAITERS = positiveNumber('BENCH_HANDOFF_WAITERS', 8, true);
const HANDOFF_HOLD_MILLIS = positiveNumber('BENCH_HANDOFF_HOLD_MS', 20, true);
const HANDOFF_REJOIN_MILLIS = positiveNumber('BENCH_HANDOFF_REJOIN_MS', 20, true);
const HANDOFF_BACKGROUND = positiveNumber('BENCH_HANDOFF_BACKGROUND_CYCLES', 200, true);
const ETCD_CONCURRENCIES = (process.env.BENCH_ETCD_CONCURRENCY ?? '16,64').split(',').filter((c) => c.trim() !== '').map(Number);
const PRIMITIVES_CONCURRENCY = positiveNumber('BENCH_PRIMITIVES_CONCURRENCY', 64, true);
const SEMAPHORE_LIMIT = positiveNumber('BENCH_SEMAPHORE_LIMIT', 8);

/** The multi-holder cells of one store, each with its own key (a fresh prefix per cell). */
const PRIMITIVE_CELLS = [
  { kind: 'semaphore', holding: { limit: SEMAPHORE_LIMIT } },
  { kind: 'shared', holding: { mode: 'shared' } },
] as const;
const primitivePath = (kind: (typeof PRIMITIVE_CELLS)[number]['kind'], store: 'postgres' | 'embedded' | 'etcd') => `sdk-${kind}-${store}` as PathName;
const wantedPrimitive = (path: PathName) => PRIMITIVES_CONCURRENCY > 0 && (ONLY === null || ONLY.has(path));
const multi = (url: string, holding: { mode?: 'shared'; limit?: number }): LoadTarget => sdk(url, { kind: 'multi', holding, waitMillis: WAIT_MILLIS });

const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));
const loadAverage = () => os.loadavg().map((v) => Number(v.toFixed(2))) as [number, number, number];

let cellCount = 0;

/** The per-acquire waits of the last handoff cell (its latencies are the handoffs). */
let lastWaits: number[] | undefined;

async function measure(path: PathName, concurrency: number, task: LoadTask, postmasterPid: number | null): Promise<CellResult> {
  const result = await runLoad(task, postmasterPid);
  lastWaits = result.waitsMillis;
  const summary = summarise(result.latenciesMillis, task.seconds);
  const cell: CellResult = {
    path,
    concurrency,
    ...summary,
    errors: result.errors,
    cpuMillisPerCycle: {
      serverThread: result.cpu.mainThreadMillis / summary.cycles,
      otherThreads: (result.cpu.nodeMillis - result.cpu.mainThreadMillis) / summary.cycles,
      postgres: result.cpu.postgresMillis === null ? null : result.cpu.postgresMillis / summary.cycles,
      clientThread: result.cpu.clientThreadMillis === null ? null : result.cpu.clientThreadMillis / summary.cycles,
    },
    loadAverage1m: os.loadavg()[0]!,
    ...(result.meanBatchSize !== undefined ? { meanBatchSize: result.meanBatchSize } : {}),
  };
  const failed = Object.values(result.errors).reduce((a, b) => a + b, 0);
  console.log(
    `  c=${String(concurrency).padEnd(3)} ${path.padEnd(18)} ${cell.cyclesPerSecond.toFixed(0).padStart(6)} cycles/s  p50 ${cell.p50Millis.toFixed(2)} ms  p99 ${cell.p99Millis.toFixed(2)} ms  ` +
      `client CPU ${cell.cpuMillisPerCycle.clientThread?.toFixed(3) ?? '—'} ms/cycle  failed ${failed}`,
  );
  return cell;
}

/** The SDK's own rows: what `new LockClient({ baseUrl })` does, or its old fetch transport. */
const sdk = (url: string, keys: KeyPattern, transport: SdkTransportKind = 'default'): LoadTarget => ({ target: 'sdk', url, keys, transport });

function task(concurrency: number, target: LoadTarget): LoadTask {
  // A fresh key space per cell: no cell inherits another's rows or dead tuples on its keys.
  const keyPrefix = `bench-${++cellCount}-`;
  return { ...target, concurrency, keyPrefix, warmupSeconds: WARMUP_SECONDS, seconds: SECONDS };
}

async function withServer<T>(start: () => Promise<BenchServer>, use: (server: BenchServer) => Promise<T>): Promise<T> {
  const server = await start();
  try {
    return await use(server);
  } finally {
    await server.stop();
  }
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const loadAtStart = loadAverage();
  const cpus = os.cpus();
  console.log(`Holdfast foundation bench — ${startedAt.toISOString()}`);
  console.log(`machine: ${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, node ${process.version}`);
  console.log(`load average at start (1/5/15 min): ${loadAtStart.join(' / ')}  (shared machine: other engineers' tests distort figures)`);
  console.log(`cells: ${WARMUP_SECONDS} s warm-up + ${SECONDS} s measured; concurrency ${CONCURRENCIES.join(', ')}`);

  const postgres = await startPostgres();
  const postmasterPid = Number(readFileSync(`${postgres.dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
  const version = String((await postgres.sql(postgres.url, 'SHOW server_version')).rows[0]?.server_version);
  const fsync = String((await postgres.sql(postgres.url, 'SHOW fsync')).rows[0]?.fsync);
  console.log(`PostgreSQL ${version} (throwaway cluster, fsync=${fsync}) at ${postgres.url}`);

  const uncontended: CellResult[] = [];
  const contended: CellResult[] = [];
  const handoff: (CellResult & { maxWaitMillis: number; medianWaitMillis: number })[] = [];
  const etcdCells: CellResult[] = [];
  const primitives: CellResult[] = [];
  try {
    const rawDatabase = await postgres.createDatabase();
    await createRawSchema(rawDatabase);
    await withServer(startEmbeddedServer, async (embedded) => {
      console.log('\nUncontended: each worker has its own session and its own key.');
      const wanted = (path: PathName) => ONLY === null || ONLY.has(path);
      for (const c of CONCURRENCIES) {
        if (wanted('raw-postgres')) uncontended.push(await measure('raw-postgres', c, task(c, { target: 'raw', databaseUrl: rawDatabase, coalesce: false }), postmasterPid));
        if (DIAGNOSTICS && wanted('raw-coalesced')) {
          uncontended.push(await measure('raw-coalesced', c, task(c, { target: 'raw', databaseUrl: rawDatabase, coalesce: true }), postmasterPid));
        }
        if (DIAGNOSTICS && wanted('store-postgres')) {
          const storeDatabase = await postgres.createDatabase();
          uncontended.push(await measure('store-postgres', c, task(c, { target: 'store', databaseUrl: storeDatabase }), postmasterPid));
        }
        const own: KeyPattern = { kind: 'own' };
        if (CEILING) {
          for (const [path, startBare] of [['bare-node-http', startBareNodeHttpServer], ['bare-fastify', startBareFastifyServer]] as const) {
            if (!wanted(path)) continue;
            uncontended.push(await withServer(startBare, (server) => measure(path, c, task(c, { target: 'http', url: server.url, keys: own, client: HTTP_CLIENT }), postmasterPid)));
          }
        }
        if (wanted('http-postgres')) {
          uncontended.push(
            await withServer(
              async () => startPostgresServer(await postgres.createDatabase()),
              (server) => measure('http-postgres', c, task(c, { target: 'http', url: server.url, keys: own, client: HTTP_CLIENT }), postmasterPid),
            ),
          );
        }
        // Each transport's row on a fresh server, as http-postgres: none inherits another's warmed-up server.
        const sdkRows: [PathName, SdkTransportKind, boolean][] = [
          ['sdk-postgres', 'default', wanted('sdk-postgres')],
          ['sdk-nodehttp-postgres', 'node-http', DIAGNOSTICS && wanted('sdk-nodehttp-postgres')],
          ['sdk-fetch-postgres', 'fetch', DIAGNOSTICS && wanted('sdk-fetch-postgres')],
        ];
        for (const [path, transport, run] of sdkRows) {
          if (!run) continue;
          uncontended.push(
            await withServer(
              async () => startPostgresServer(await postgres.createDatabase()),
              (server) => measure(path, c, task(c, sdk(server.url, own, transport)), postmasterPid),
            ),
          );
        }
        if (wanted('http-embedded')) uncontended.push(await measure('http-embedded', c, task(c, { target: 'http', url: embedded.url, keys: own, client: HTTP_CLIENT }), null));
        if (wanted('sdk-embedded')) uncontended.push(await measure('sdk-embedded', c, task(c, sdk(embedded.url, own)), null));
      }

      const contendedConcurrencies = HOT_KEYS > 0 ? CONCURRENCIES.filter((c) => c > HOT_KEYS) : [];
      if (contendedConcurrencies.length > 0) {
        console.log(`\nContended: worker i uses hot key i mod ${HOT_KEYS}, waiting server-side up to ${WAIT_MILLIS} ms.`);
        const hot: KeyPattern = { kind: 'hot', hotKeys: HOT_KEYS, waitMillis: WAIT_MILLIS };
        for (const c of contendedConcurrencies) {
          contended.push(
            await withServer(
              async () => startPostgresServer(await postgres.createDatabase()),
              (server) => measure('http-postgres', c, task(c, { target: 'http', url: server.url, keys: hot, client: HTTP_CLIENT }), postmasterPid),
            ),
          );
          contended.push(
            await withServer(
              async () => startPostgresServer(await postgres.createDatabase()),
              (server) => measure('sdk-postgres', c, task(c, sdk(server.url, hot)), postmasterPid),
            ),
          );
          contended.push(await measure('http-embedded', c, task(c, { target: 'http', url: embedded.url, keys: hot, client: HTTP_CLIENT }), null));
          contended.push(await measure('sdk-embedded', c, task(c, sdk(embedded.url, hot)), null));
        }
      }

      const c = PRIMITIVES_CONCURRENCY;
      if (PRIMITIVE_CELLS.some(({ kind }) => wantedPrimitive(primitivePath(kind, 'postgres')) || wantedPrimitive(primitivePath(kind, 'embedded')))) {
        console.log(`\nMulti-holder keys through the SDK: all ${c} workers on one key, a semaphore (limit ${SEMAPHORE_LIMIT}) or shared grants, waiting server-side up to ${WAIT_MILLIS} ms.`);
      }
      for (const { kind, holding } of PRIMITIVE_CELLS) {
        if (wantedPrimitive(primitivePath(kind, 'postgres'))) {
          primitives.push(
            await withServer(
              async () => startPostgresServer(await postgres.createDatabase()),
              (server) => measure(primitivePath(kind, 'postgres'), c, task(c, multi(server.url, holding)), postmasterPid),
            ),
          );
        }
        if (wantedPrimitive(primitivePath(kind, 'embedded'))) primitives.push(await measure(primitivePath(kind, 'embedded'), c, task(c, multi(embedded.url, holding)), null));
      }
    });

    if (HANDOFF_WAITERS > 0) {
      console.log(
        `\nHot-key handoff on PostgreSQL through HTTP: ${HANDOFF_WAITERS} waiters on one key, hold ${HANDOFF_HOLD_MILLIS} ms, rejoin after ${HANDOFF_REJOIN_MILLIS} ms, ${HANDOFF_BACKGROUND} raw background cycles/s.`,
      );
      await withServer(
        async () => startPostgresServer(await postgres.createDatabase()),
        async (server) => {
          const handoffTask = task(HANDOFF_WAITERS, {
            target: 'handoff',
            url: server.url,
            holdMillis: HANDOFF_HOLD_MILLIS,
            rejoinMillis: HANDOFF_REJOIN_MILLIS,
            waitMillis: WAIT_MILLIS,
            ...(HANDOFF_BACKGROUND > 0 ? { background: { databaseUrl: rawDatabase, cyclesPerSecond: HANDOFF_BACKGROUND } } : {}),
          });
          const cell = await measure('handoff-postgres', HANDOFF_WAITERS, handoffTask, postmasterPid);
          const waits = [...(lastWaits ?? [])].sort((a, b) => a - b);
          const medianWaitMillis = percentile(waits, 50);
          const maxWaitMillis = waits.at(-1) ?? Number.NaN;
          console.log(`  waits: median ${medianWaitMillis.toFixed(1)} ms, max ${maxWaitMillis.toFixed(1)} ms (${(maxWaitMillis / medianWaitMillis).toFixed(1)}× the median)`);
          handoff.push({ ...cell, medianWaitMillis, maxWaitMillis });
        },
      );
    }
  } finally {
    await postgres.stop();
  }

  if (ETCD_CONCURRENCIES.length > 0) {
    console.log(`\netcd: Holdfast over HTTP and through the SDK on the etcd store vs etcd3's client.lock(), same etcd, each worker its own key.`);
    const etcd = await startEtcd();
    // The etcd member's CPU goes in the backend column (read from /proc like the postmaster's).
    const etcdPid = etcd.member.pid;
    try {
      for (const c of ETCD_CONCURRENCIES) {
        const own: KeyPattern = { kind: 'own' };
        etcdCells.push(
          await withServer(
            () => startEtcdServer(etcd.endpoints),
            (server) => measure('http-etcd', c, task(c, { target: 'http', url: server.url, keys: own, client: HTTP_CLIENT }), etcdPid),
          ),
        );
        etcdCells.push(
          await withServer(
            () => startEtcdServer(etcd.endpoints),
            (server) => measure('sdk-etcd', c, task(c, sdk(server.url, own)), etcdPid),
          ),
        );
        if (DIAGNOSTICS) {
          // The same store with every acquire its own txn: what the acquire group commit buys.
          etcdCells.push(
            await withServer(
              () => startEtcdServer(etcd.endpoints, { acquireBatching: false }),
              (server) => measure('http-etcd-unbatched', c, task(c, { target: 'http', url: server.url, keys: own, client: HTTP_CLIENT }), etcdPid),
            ),
          );
        }
        etcdCells.push(await measure('etcd-client-lock', c, task(c, { target: 'etcd-lock', endpoints: etcd.endpoints }), etcdPid));
      }
      for (const { kind, holding } of PRIMITIVE_CELLS) {
        const path = primitivePath(kind, 'etcd');
        if (!wantedPrimitive(path)) continue;
        const c = PRIMITIVES_CONCURRENCY;
        primitives.push(await withServer(() => startEtcdServer(etcd.endpoints), (server) => measure(path, c, task(c, multi(server.url, holding)), etcdPid)));
      }
    } finally {
      await etcd.stop();
    }
  }

  const loadAtEnd = loadAverage();
  const finishedAt = new Date();
  const ratioRows = ratios(uncontended);
  const sdkRows = sdkComparisons([...uncontended, ...etcdCells]);

  const sections = [
    `### Uncontended — each worker its own session and its own key\n\n${cellTable(uncontended)}`,
    ...(sdkRows.length > 0
      ? [
          `### Through the SDK ÷ plain HTTP — same store, same concurrency (client CPU = the load worker's own thread per cycle)\n\n${sdkComparisonTable(sdkRows)}`,
        ]
      : []),
    `### HTTP-postgres ÷ raw-postgres\n\n${ratioTable(ratioRows)}`,
    ...(contended.length > 0
      ? [
          `### Contended — worker i on hot key i mod ${HOT_KEYS}, server-side wait up to ${WAIT_MILLIS} ms (cycle includes the wait)\n\n${cellTable(contended)}`,
        ]
      : []),
  ];
  if (primitives.length > 0) {
    sections.push(
      `### Multi-holder keys (issue 23) — through the SDK, every worker on one key: a semaphore (limit ${SEMAPHORE_LIMIT}) or shared grants (readers only), server-side wait up to ${WAIT_MILLIS} ms (cycle includes the wait; the backend column is postgres's CPU, or etcd's on etcd rows)\n\n${cellTable(primitives)}`,
    );
  }
  if (handoff.length > 0) {
    sections.push(
      `### Hot-key handoff — PostgreSQL through HTTP, ${HANDOFF_WAITERS} waiters on one key, hold ${HANDOFF_HOLD_MILLIS} ms, rejoin ${HANDOFF_REJOIN_MILLIS} ms, ${HANDOFF_BACKGROUND} raw background cycles/s (latency = release sent → next grant)\n\n` +
        `${cellTable(handoff)}\n\n` +
        handoff.map((h) => `Waits (acquire sent → granted): median ${h.medianWaitMillis.toFixed(1)} ms, max ${h.maxWaitMillis.toFixed(1)} ms = ${(h.maxWaitMillis / h.medianWaitMillis).toFixed(1)}× the median.`).join('\n'),
    );
  }
  if (etcdCells.length > 0) {
    const ratioLines = ETCD_CONCURRENCIES.map((c) => {
      const ours = etcdCells.find((e) => e.path === 'http-etcd' && e.concurrency === c);
      const recipe = etcdCells.find((e) => e.path === 'etcd-client-lock' && e.concurrency === c);
      const unbatched = etcdCells.find((e) => e.path === 'http-etcd-unbatched' && e.concurrency === c);
      const cpu = (cell: CellResult) => cell.cpuMillisPerCycle.serverThread + cell.cpuMillisPerCycle.otherThreads + (cell.cpuMillisPerCycle.postgres ?? 0);
      if (!ours || !recipe) return '';
      return (
        `c=${c}: Holdfast over HTTP ÷ client.lock() = ${(ours.cyclesPerSecond / recipe.cyclesPerSecond).toFixed(2)}× ` +
        `(CPU per cycle, all threads + etcd: ${cpu(recipe).toFixed(2)} ÷ ${cpu(ours).toFixed(2)} ms = ${(cpu(recipe) / cpu(ours)).toFixed(2)}×` +
        (unbatched ? `; acquires unbatched: ${(unbatched.cyclesPerSecond / recipe.cyclesPerSecond).toFixed(2)}×, ${cpu(unbatched).toFixed(2)} ms)` : ')')
      );
    });
    sections.push(
      `### etcd — Holdfast over HTTP (etcd store) vs etcd3 client.lock(), each worker its own key (client.lock() runs in the load worker)\n\n${cellTable(etcdCells, 'etcd')}\n\n${ratioLines.join('; ')}`,
    );
  }
  console.log(`\n${sections.join('\n\n')}\n`);
  console.log(`load average at end (1/5/15 min): ${loadAtEnd.join(' / ')}`);

  const date = startedAt.toISOString().slice(0, 10);
  // A run of some rows only (BENCH_ONLY) leaves the committed tables alone.
  const jsonFile = ONLY === null ? `${RESULTS_DIR}foundation-${date}.json` : `${RESULTS_DIR}partial/foundation-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`;
  writeJson(jsonFile, {
    benchmark: 'foundation (issue 2, criterion 13)',
    command: 'npm run bench',
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    settings: {
      seconds: SECONDS,
      warmupSeconds: WARMUP_SECONDS,
      concurrencies: CONCURRENCIES,
      hotKeys: HOT_KEYS,
      waitMillis: WAIT_MILLIS,
      httpClient: HTTP_CLIENT,
      diagnostics: DIAGNOSTICS,
      ceiling: CEILING,
      only: ONLY === null ? null : [...ONLY],
      primitivesConcurrency: PRIMITIVES_CONCURRENCY,
      semaphoreLimit: SEMAPHORE_LIMIT,
    },
    machine: { cpus: cpus.length, cpuModel: cpus[0]?.model, node: process.version, loadAverageStart: loadAtStart, loadAverageEnd: loadAtEnd },
    postgres: { version, fsync },
    uncontended,
    ratios: ratioRows,
    sdkVersusHttp: sdkRows,
    contended,
    handoff,
    etcd: etcdCells,
    primitives,
  });

  if (ONLY !== null) {
    console.log(`wrote ${jsonFile} (BENCH_ONLY run: foundation.md untouched)`);
    return;
  }
  writeMarkdownSection(
    `${RESULTS_DIR}foundation.md`,
    'Foundation bench (issue 2, criterion 13)',
    [
      `## Latest run — ${startedAt.toISOString()}`,
      '',
      `Command: \`npm run bench\` (${WARMUP_SECONDS} s warm-up + ${SECONDS} s measured per cell). Raw JSON: \`bench/results/foundation-${date}.json\`.`,
      '',
      `Machine: ${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, node ${process.version}; PostgreSQL ${version}, throwaway cluster, fsync=${fsync}.`,
      `**Load average (1/5/15 min): ${loadAtStart.join(' / ')} at start, ${loadAtEnd.join(' / ')} at end** — on ${cpus.length} cores shared with other engineers' test runs; cycles/s are depressed and noisy by that much. CPU ms per cycle are steadier than cycles/s but also rise on a busy machine (cache and scheduler effects), so compare rows of one run, not runs. *server thread* = this process's main thread (the Holdfast server; on the embedded store also PGlite, which runs on it); *load worker + other* = the load generator's worker thread plus GC/libuv helper threads (on raw and store cells the whole client side runs there: the \`pg\` pool, the batcher, the store); *postgres* = postmaster and all backends.`,
      '',
      `HTTP client: ${HTTP_CLIENT === 'lean' ? 'a minimal keep-alive HTTP/1.1 client, one socket per worker (bench/lib/lean-http.ts), so the load generator takes as little of the 2 cores as it can' : 'node:http with a keep-alive agent, one socket per worker'} for the *http-* (plain HTTP) rows; *sdk-* rows take the same locks through @holdfast/client with its default transport (one LockClient per cell, a session per worker). Raw and HTTP-postgres use the same PostgreSQL cluster (separate databases); each HTTP-postgres cell gets a fresh Holdfast server with the default settings (HOLDFAST_PG_POOL_SIZE default); the raw pool has c connections. *raw-coalesced* and *store-postgres* are diagnostic rows: the raw work through the multi-row batching prototype, and Holdfast's SQL store called directly without HTTP (see the design note below).`,
      '',
      ...sections.flatMap((s) => [s, '']),
    ].join('\n'),
  );
  console.log(`wrote ${jsonFile} and ${RESULTS_DIR}foundation.md`);
}

await main();
