/**
 * Starts what the chosen systems need, each on its own server processes (so each row's
 * server-side CPU is its own and no idle neighbour's background work lands in it), all up for
 * the whole run so cells can interleave:
 *   Holdfast/embedded  a `holdfast server` process (PGlite inside it)
 *   Holdfast/postgres  a `holdfast server` process + its own PostgreSQL 15 cluster
 *   Holdfast/etcd      a `holdfast server` process + its own etcd member
 *   etcd3 recipe       its own etcd member
 *   pg_advisory_lock   its own PostgreSQL 15 cluster
 *   Redlock            its own redis-server
 * PostgreSQL runs with fsync on (the test helper's default is off) and etcd keeps its data on
 * disk, not tmpfs: each system on its defaults, paying for its durability where it has any.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startEtcd, type EtcdNode } from '../../../test/support/etcd.js';
import { startPostgres, type PostgresCluster } from '../../../test/support/postgres.js';
import { serverRuntime } from '../compiled-build.js';
import { clusterCpuMillis, processCpuMillis } from '../cpu.js';
import type { Cleanup } from './cleanup.js';
import { etcdRecipeSystem } from './etcd-recipe.js';
import { filesystemOf } from './filesystem.js';
import { holdfastSdkSystem } from './holdfast-sdk.js';
import { spawnHoldfast, type HoldfastProcess } from './holdfast-process.js';
import { pgAdvisorySystem } from './pg-advisory.js';
import { ensureRedisServer, startRedis } from './redis-server.js';
import { redlockSystem } from './redlock.js';
import type { PeersSettings } from './settings.js';
import type { PeerSystem, SystemId } from './system.js';

export interface StartedSystems {
  systems: PeerSystem[];
  /** Versions, settings and where data lives, for the banner, peers.md and the JSON. */
  environment: Record<string, string>;
}

async function postgres(cleanup: Cleanup, name: string, environment: Record<string, string>) {
  const cluster: PostgresCluster = await startPostgres({ fsync: true });
  cleanup.add(`PostgreSQL (${name})`, () => cluster.stop());
  const pid = Number(readFileSync(path.join(cluster.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const show = async (setting: string) => String(Object.values((await cluster.sql(cluster.url, `SHOW ${setting}`)).rows[0] ?? {})[0]);
  environment[`postgres (${name})`] =
    `PostgreSQL ${await show('server_version')}, fsync=${await show('fsync')}, synchronous_commit=${await show('synchronous_commit')}, ` +
    `data on ${filesystemOf(cluster.dataDir)}`;
  return { databaseUrl: await cluster.createDatabase(), cpu: () => clusterCpuMillis(pid) };
}

async function etcd(cleanup: Cleanup, name: string, dataRoot: string, environment: Record<string, string>) {
  const node: EtcdNode = await startEtcd({ dataRoot });
  cleanup.add(`etcd (${name})`, () => node.stop());
  const pid = node.member.pid;
  if (pid === null) throw new Error(`etcd (${name}) has no process id`);
  const version = execFileSync(process.env.ETCD_BINARY ?? 'etcd', ['--version'], { encoding: 'utf8' }).split('\n')[0] ?? '';
  environment[`etcd (${name})`] = `${version.trim()}, one member, data on ${filesystemOf(node.member.dataDir)}`;
  return { endpoints: node.endpoints, cpu: () => processCpuMillis(pid) };
}

async function holdfast(cleanup: Cleanup, store: string, env: (dir: string) => Record<string, string>, environment: Record<string, string>) {
  const server: HoldfastProcess = await spawnHoldfast(store, env);
  cleanup.add(`holdfast server (${store})`, () => server.stop());
  environment[`holdfast server (${store})`] = `a \`holdfast server\` process on ${serverRuntime()}, defaults; its directory on ${filesystemOf(server.dir)}`;
  return server;
}

async function startOne(id: SystemId, settings: PeersSettings, cleanup: Cleanup, environment: Record<string, string>): Promise<PeerSystem> {
  const waitBudgetMillis = settings.waitBudgetMillis;
  switch (id) {
    case 'holdfast-embedded': {
      const server = await holdfast(cleanup, 'embedded', (dir) => ({ HOLDFAST_STORE: 'embedded', HOLDFAST_DATA_DIR: path.join(dir, 'data') }), environment);
      return holdfastSdkSystem({ id, label: 'Holdfast/embedded (SDK)', url: server.url, serverPid: server.pid, storeCpuMillis: () => ({}), waitBudgetMillis });
    }
    case 'holdfast-postgres': {
      const store = await postgres(cleanup, 'Holdfast', environment);
      const server = await holdfast(cleanup, 'postgres', () => ({ HOLDFAST_STORE: 'postgres', DATABASE_URL: store.databaseUrl }), environment);
      const storeCpuMillis = () => ({ postgres: store.cpu() });
      return holdfastSdkSystem({ id, label: 'Holdfast/postgres (SDK)', url: server.url, serverPid: server.pid, storeCpuMillis, waitBudgetMillis });
    }
    case 'holdfast-etcd': {
      const store = await etcd(cleanup, 'Holdfast', settings.etcdDataRoot, environment);
      const server = await holdfast(cleanup, 'etcd', () => ({ HOLDFAST_STORE: 'etcd', ETCD_ENDPOINTS: store.endpoints.join(',') }), environment);
      const storeCpuMillis = () => ({ etcd: store.cpu() });
      return holdfastSdkSystem({ id, label: 'Holdfast/etcd (SDK)', url: server.url, serverPid: server.pid, storeCpuMillis, waitBudgetMillis });
    }
    case 'etcd3-lock': {
      const store = await etcd(cleanup, 'etcd3 recipe', settings.etcdDataRoot, environment);
      return etcdRecipeSystem({ endpoints: store.endpoints, cpuMillis: store.cpu, waitBudgetMillis, backoff: settings.etcdBackoff });
    }
    case 'pg-advisory': {
      const store = await postgres(cleanup, 'pg_advisory_lock', environment);
      return pgAdvisorySystem({ databaseUrl: store.databaseUrl, cpuMillis: store.cpu, waitBudgetMillis });
    }
    case 'redlock': {
      const redis = await startRedis(ensureRedisServer());
      cleanup.add('redis-server', () => redis.stop());
      environment['redis-server'] = `${redis.version}; persistence off (--save '' --appendonly no)`;
      return redlockSystem({ port: redis.port, redisPid: redis.pid, waitBudgetMillis });
    }
  }
}

/**
 * Starts every chosen system at once (a fresh embedded store's initdb dominates), waits for all
 * of them to settle so whatever did start is registered with `cleanup`, then throws the first failure.
 */
export async function startSystems(settings: PeersSettings, cleanup: Cleanup): Promise<StartedSystems> {
  const environment: Record<string, string> = {};
  const started = await Promise.allSettled(settings.systems.map((id) => startOne(id, settings, cleanup, environment)));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  const systems = started.map((s) => (s as PromiseFulfilledResult<PeerSystem>).value);
  return { systems, environment: Object.fromEntries(Object.entries(environment).sort(([a], [b]) => a.localeCompare(b))) };
}
