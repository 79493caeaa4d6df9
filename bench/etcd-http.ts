/**
 * `npm run bench:etcd-http` — where an acquire+release cycle's time goes on
 * etcd, and the ceiling of the machine: Holdfast over HTTP on the etcd store
 * against etcd3's `client.lock()` and against a trivial etcd client doing one
 * create-if-absent txn and one compare-and-delete txn per cycle (the RPCs the
 * store needs, nothing else), same etcd, same run. Each worker its own key.
 *
 * Per cell: cycles/s, p50/p99, CPU ms per cycle of the server thread (the
 * Holdfast server; the etcd3 client of the non-HTTP rows runs in the load
 * worker and counts under "worker"), the load worker and the etcd process
 * (/proc/PID/stat), and what etcd served per cycle (unary gRPC calls by method,
 * raft proposals committed) from etcd's /metrics over the measured window.
 *
 * Paths (BENCH_ETCD_PATHS, comma-separated, default all):
 *   http-etcd            the product's default store settings
 *   http-etcd-unbatched  the etcd store with acquire batching off (one txn per acquire)
 *   etcd-client-lock     etcd3's lock recipe
 *   etcd-raw             the trivial client
 * Knobs: BENCH_ETCD_CONCURRENCY (default "16,64"), BENCH_SECONDS (5), BENCH_WARMUP_SECONDS (1),
 * BENCH_ROUNDS (default 1: every path once per round, rounds interleaved so load drift hits all paths).
 */
import os from 'node:os';
import { startEtcd } from '../test/support/etcd.js';
import { counterDelta, readEtcdCounters, type EtcdCounters } from './lib/etcd-metrics.js';
import type { LoadTarget } from './lib/load-task.js';
import { runLoad } from './lib/run-load.js';
import { startEtcdServer, type BenchServer } from './lib/servers.js';
import { summarise } from './lib/stats.js';

const PATHS = ['http-etcd', 'http-etcd-unbatched', 'etcd-client-lock', 'etcd-raw'] as const;
type Path = (typeof PATHS)[number];

const chosen = (process.env.BENCH_ETCD_PATHS ?? PATHS.join(',')).split(',').map((p) => p.trim()) as Path[];
for (const path of chosen) if (!PATHS.includes(path)) throw new Error(`BENCH_ETCD_PATHS: unknown path ${path}`);
const CONCURRENCIES = (process.env.BENCH_ETCD_CONCURRENCY ?? '16,64').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);

const load = () => os.loadavg().map((v) => v.toFixed(2)).join(' / ');
let cellCount = 0;

const etcd = await startEtcd();
const etcdPid = etcd.member.pid;
if (etcdPid === null) throw new Error('etcd is not running');
console.log(`etcd over HTTP — ${new Date().toISOString()}, ${os.cpus().length} CPUs, node ${process.version}, load at start ${load()}`);
console.log(`cells: ${WARMUP_SECONDS} s warm-up + ${SECONDS} s measured; paths ${chosen.join(', ')}; concurrency ${CONCURRENCIES.join(', ')}; rounds ${ROUNDS}`);

async function cell(path: Path, concurrency: number): Promise<void> {
  let server: BenchServer | undefined;
  let target: LoadTarget;
  if (path === 'http-etcd' || path === 'http-etcd-unbatched') {
    server = await startEtcdServer(etcd.endpoints, path === 'http-etcd-unbatched' ? { acquireBatching: false } : {});
    target = { target: 'http', url: server.url, keys: { kind: 'own' }, client: 'lean' };
  } else if (path === 'etcd-client-lock') {
    target = { target: 'etcd-lock', endpoints: etcd.endpoints };
  } else {
    target = { target: 'etcd-raw', endpoints: etcd.endpoints };
  }
  const edges: Partial<Record<'start' | 'end', Promise<EtcdCounters>>> = {};
  try {
    const result = await runLoad(
      { ...target, concurrency, keyPrefix: `etcd-http-${++cellCount}-`, warmupSeconds: WARMUP_SECONDS, seconds: SECONDS },
      etcdPid,
      (edge) => {
        edges[edge] = readEtcdCounters(etcd.member.clientUrl);
      },
    );
    const summary = summarise(result.latenciesMillis, SECONDS);
    const served = counterDelta(await edges.start!, await edges.end!);
    const per = (value: number) => (value / summary.cycles).toFixed(3);
    const calls = Object.entries(served.calls)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([method, count]) => `${method} ${per(count)}`)
      .join(', ');
    const failed = Object.values(result.errors).reduce((a, b) => a + b, 0);
    console.log(
      `  c=${String(concurrency).padEnd(3)} ${path.padEnd(20)} ${summary.cyclesPerSecond.toFixed(0).padStart(6)} cycles/s  p50 ${summary.p50Millis.toFixed(2)} ms  p99 ${summary.p99Millis.toFixed(2)} ms  failed ${failed}\n` +
        `        CPU ms/cycle: server thread ${per(result.cpu.mainThreadMillis)}, worker ${per(result.cpu.nodeMillis - result.cpu.mainThreadMillis)}, etcd ${per(result.cpu.postgresMillis ?? Number.NaN)}` +
        ` | per cycle: proposals ${per(served.proposals)}, ${calls} | load ${load()}`,
    );
  } finally {
    await server?.stop();
  }
}

try {
  for (let round = 1; round <= ROUNDS; round += 1) {
    if (ROUNDS > 1) console.log(`round ${round}`);
    for (const concurrency of CONCURRENCIES) {
      for (const path of chosen) await cell(path, concurrency);
    }
  }
} finally {
  await etcd.stop();
}
