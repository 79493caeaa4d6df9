/**
 * `npm run bench:profile` — one HTTP cell under load, for a CPU profile of the
 * server thread alone: `node --cpu-prof --cpu-prof-dir=DIR --import tsx bench/profile-server.ts`.
 * The profile's main-thread file covers start-up too; the load runs from
 * PROFILE_WARMUP_SECONDS on. Knobs: PROFILE_STORE (postgres | embedded | etcd, default
 * postgres; etcd: a one-member etcd on tmpfs, whose own CPU per cycle is printed too), PROFILE_CONCURRENCY (default 64), PROFILE_SECONDS (default 10),
 * PROFILE_KEYS (own | hot, default own), PROFILE_CLIENT (sdk | lean | node, default sdk: what users
 * send through; lean is the bench's raw-socket client, the server's cost with the least client
 * beside it), HOLDFAST_* settings as the server reads them. A change to the store's batching is
 * judged through the SDK: the lean client and the SDK can disagree about it (stop 36).
 * PROFILE_PG_STATEMENTS=N (postgres): also print the N statements PostgreSQL spent most time on, per
 * cycle (pg_stat_statements; 1 means 15).
 */
import os from 'node:os';
import { readFileSync } from 'node:fs';
import { startEtcd } from '../test/support/etcd.js';
import { startPostgres } from '../test/support/postgres.js';
import { processCpuMillis } from './lib/cpu.js';
import { counterDelta, readEtcdCounters, type EtcdCounters } from './lib/etcd-metrics.js';
import type { KeyPattern } from './lib/load-task.js';
import { runLoad } from './lib/run-load.js';
import { startEmbeddedServer, startEtcdServer, startPostgresServer } from './lib/servers.js';
import { summarise } from './lib/stats.js';
import { formatStatements, PG_STATEMENTS_SETTINGS, readStatements, resetStatements, type StatementCounts } from './lib/pg-statements.js';

const store = process.env.PROFILE_STORE ?? 'postgres';
const concurrency = Number(process.env.PROFILE_CONCURRENCY ?? 64);
const seconds = Number(process.env.PROFILE_SECONDS ?? 10);
const hot = process.env.PROFILE_KEYS === 'hot';
const client = process.env.PROFILE_CLIENT ?? 'sdk';
if (client !== 'sdk' && client !== 'lean' && client !== 'node') throw new Error(`PROFILE_CLIENT is sdk, lean or node, not ${client}`);

const statementLimit = Number(process.env.PROFILE_PG_STATEMENTS ?? 0) === 1 ? 15 : Number(process.env.PROFILE_PG_STATEMENTS ?? 0);
const statements = statementLimit > 0;
if (statements && store !== 'postgres') throw new Error('PROFILE_PG_STATEMENTS needs PROFILE_STORE=postgres');

if (!['postgres', 'embedded', 'etcd'].includes(store)) throw new Error(`PROFILE_STORE is postgres, embedded or etcd, not ${store}`);
const postgres = store === 'postgres' ? await startPostgres(statements ? { settings: PG_STATEMENTS_SETTINGS } : {}) : null;
const etcd = store === 'etcd' ? await startEtcd() : null;
try {
  const postmasterPid = postgres ? Number(readFileSync(`${postgres.dataDir}/postmaster.pid`, 'utf8').split('\n')[0]) : null;
  const databaseUrl = postgres ? await postgres.createDatabase() : null;
  const server = databaseUrl
    ? await startPostgresServer(databaseUrl, process.env.HOLDFAST_PG_POOL_SIZE)
    : etcd
      ? await startEtcdServer(etcd.endpoints)
      : await startEmbeddedServer();
  const etcdCpu = () => (etcd ? processCpuMillis(etcd.member.pid!) : 0);
  let etcdCpuAt = 0;
  let etcdCpuMillis = 0;
  let etcdCountersAt: Promise<EtcdCounters> | undefined;
  let etcdCounters: Promise<EtcdCounters> | undefined;
  try {
    // Counted inside the measured window only: reset as it opens (the first reset creates the extension), read as it closes.
    if (statements) await resetStatements(databaseUrl!);
    let windowStart: Promise<void> | undefined;
    let windowEnd: Promise<StatementCounts> | undefined;
    const onWindow = (edge: 'start' | 'end') => {
      if (edge === 'start') etcdCpuAt = etcdCpu();
      else etcdCpuMillis = etcdCpu() - etcdCpuAt;
      if (etcd && edge === 'start') etcdCountersAt = readEtcdCounters(etcd.member.clientUrl);
      if (etcd && edge === 'end') etcdCounters = Promise.all([etcdCountersAt!, readEtcdCounters(etcd.member.clientUrl)]).then(([from, to]) => counterDelta(from, to));
      if (!statements) return;
      if (edge === 'start') windowStart = resetStatements(databaseUrl!);
      else windowEnd = windowStart?.then(() => readStatements(databaseUrl!, statementLimit));
    };
    const keys: KeyPattern = hot ? { kind: 'hot', hotKeys: 4, waitMillis: 5000 } : { kind: 'own' };
    const result = await runLoad(
      {
        ...(client === 'sdk' ? { target: 'sdk', url: server.url, keys, transport: 'default' } : { target: 'http', url: server.url, keys, client }),
        concurrency,
        keyPrefix: 'profile-',
        warmupSeconds: 1,
        seconds,
      },
      postmasterPid,
      onWindow,
    );
    const summary = summarise(result.latenciesMillis, seconds);
    console.log(
      `${store} c=${concurrency}${hot ? ' hot' : ''} via ${client}: ${summary.cyclesPerSecond.toFixed(0)} cycles/s, p50 ${summary.p50Millis.toFixed(2)} ms, p99 ${summary.p99Millis.toFixed(2)} ms, ` +
        `server thread ${(result.cpu.mainThreadMillis / summary.cycles).toFixed(3)} ms/cycle, postgres ${result.cpu.postgresMillis === null ? '—' : (result.cpu.postgresMillis / summary.cycles).toFixed(3)} ms/cycle, ` +
        (etcd ? `etcd ${(etcdCpuMillis / summary.cycles).toFixed(3)} ms/cycle, ` : '') +
        (result.cpu.clientThreadMillis === null ? '' : `client thread ${(result.cpu.clientThreadMillis / summary.cycles).toFixed(3)} ms/cycle, `) +
        `errors ${JSON.stringify(result.errors)}, load ${os.loadavg().map((v) => v.toFixed(1)).join(' / ')}`,
    );
    if (etcdCounters) {
      const { calls, proposals } = await etcdCounters;
      const perCycle = (n: number) => (n / summary.cycles).toFixed(3);
      console.log(`etcd per cycle: ${Object.entries(calls).sort((a, b) => b[1] - a[1]).map(([method, n]) => `${method} ${perCycle(n)}`).join(', ')}; raft proposals ${perCycle(proposals)}`);
    }
    if (windowEnd) for (const line of formatStatements(await windowEnd, summary.cycles)) console.log(line);
  } finally {
    await server.stop();
  }
} finally {
  await postgres?.stop();
  await etcd?.stop();
}
