/**
 * The system under test for a history run: 1–3 `holdfast server` processes on
 * one store, each behind its own TCP proxy (the clients only ever reach the
 * proxies), and the store itself — an embedded data directory (one instance),
 * a PostgreSQL cluster of the run's own (so stopping it disturbs no other test),
 * or etcd (one member, or three for leader kills and member partitions; each
 * server reaches each member through a TCP proxy of its own, so one server can
 * be cut from the store). Every fault the nemesis uses is an action here, built
 * from the fault tools in test/support; each server's clock can be moved
 * through the fault seam server/fault-clock.ts (a file per instance).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { FAULT_CLOCK_OFFSET_FILE_ENV } from '../../../server/fault-clock.js';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { startBlackholeProxy, type BlackholeProxy } from '../../support/blackhole-proxy.js';
import { startEtcdCluster, type EtcdCluster } from '../../support/etcd.js';
import { pgStartArgs, runPgProgram, startPostgres, type PostgresCluster } from '../../support/postgres.js';
import { freePort } from '../../support/ports.js';
import { spawnServer, type ServerProcess } from '../../support/server-process.js';
import { pgliteTemplate, sharedPostgres, type StoreName } from '../../support/server.js';
import { PgliteDatabase } from '../../../lock/store/sql/pglite-database.js';
import type { PlantedBug } from './planted-bugs.js';

const PLANTED_SERVER = path.resolve(import.meta.dirname, 'planted-server.ts');

export interface ClusterOptions {
  store: StoreName;
  /** Server instances (embedded: always 1 — one data directory has one server). */
  instances: number;
  /** etcd members: 3 makes leader kills and member partitions possible. */
  etcdMembers?: 1 | 3;
  /** A PostgreSQL cluster of the run's own (needed to restart the store); else the suite's shared one. */
  ownPostgres?: boolean;
  plantedBug?: PlantedBug;
  env?: Record<string, string>;
}

export interface Instance {
  readonly label: string;
  readonly proxy: BlackholeProxy;
  /** Where clients connect: the proxy. */
  readonly url: string;
  server: ServerProcess;
  readonly port: number;
  /** What this instance's process is started with beyond the cluster's env (its clock file, its store proxies). */
  readonly env: Record<string, string>;
  /** The file its clock offset is read from (server/fault-clock.ts). */
  readonly clockFile: string;
  /** Its own TCP proxies to the store (etcd: one per member), for cutting it from the store alone. */
  readonly storeProxies: BlackholeProxy[];
}

/** One fault, started: what it hit, and how to end it. */
export interface StartedFault {
  target: string;
  heal(): Promise<void>;
}

export type FaultAction = (pick: (n: number) => number, millis: number) => Promise<StartedFault>;

export interface Cluster {
  readonly store: StoreName;
  readonly instances: Instance[];
  readonly operatorToken: string;
  /** The fault actions this cluster supports, by kind. */
  faults(): Record<string, FaultAction>;
  stop(): Promise<void>;
}

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const workDir = mkdtempSync(path.join(tmpdir(), 'holdfast-history-'));
  const operatorToken = `op-${randomBytes(16).toString('hex')}`;
  const tokensFile = path.join(workDir, 'tokens.json');
  writeFileSync(tokensFile, JSON.stringify([{ name: 'history-operator', token: operatorToken, role: 'operator' }]), { mode: 0o600 });
  const env: Record<string, string> = {
    HOLDFAST_STORE: options.store,
    HOLDFAST_ADMIN_TOKENS_FILE: tokensFile,
    ...(options.plantedBug ? { HOLDFAST_PLANTED_BUG: options.plantedBug } : {}),
    ...options.env,
  };
  // The real `holdfast server`, or the test-only entry with the planted bug; restarts reuse the port the proxy forwards to.
  const spawn = (port: number, own: Record<string, string>) =>
    spawnServer({ ...env, ...own }, { port, ...(options.plantedBug ? { nodeArgs: ['--import', 'tsx', PLANTED_SERVER] } : {}) });
  let postgres: PostgresCluster | undefined;
  let etcd: EtcdCluster | undefined;
  const cleanups: (() => Promise<void>)[] = [async () => rmSync(workDir, { recursive: true, force: true })];
  const count = options.store === 'embedded' ? 1 : options.instances;
  const instances: Instance[] = [];
  const stop = async () => {
    for (const instance of instances) {
      if (instance.server.child.exitCode === null && instance.server.child.signalCode === null) instance.server.child.kill('SIGKILL');
      await instance.server.exited;
      await instance.proxy.close();
      for (const proxy of instance.storeProxies) await proxy.close();
    }
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  };
  try {
    if (options.store === 'embedded') {
      env.HOLDFAST_DATA_DIR = path.join(workDir, 'data');
      // The migrated schema from the suite's cached template: a fresh directory's initdb (WASM) takes
      // 10–30 s on a busy machine, and the run is about what happens after the start, not the start.
      const seeded = await PgliteDatabase.open(path.join(env.HOLDFAST_DATA_DIR, 'pgdata'), await pgliteTemplate(), { ownerDir: env.HOLDFAST_DATA_DIR });
      await seeded.close();
    } else if (options.store === 'postgres') {
      if (options.ownPostgres) {
        const own = await startPostgres();
        postgres = own;
        cleanups.push(() => own.stop());
      }
      env.DATABASE_URL = await (postgres ?? (await sharedPostgres())).createDatabase();
      env.HOLDFAST_PG_POOL_SIZE = '8';
    } else {
      const members = options.etcdMembers ?? 1;
      const started = await startEtcdCluster(members, { peerProxies: members > 1 });
      etcd = started;
      cleanups.push(() => started.stop());
      env.ETCD_ENDPOINTS = etcd.endpoints.join(',');
    }
    // Started side by side (each start is mostly waiting on its own process); a failed start still has
    // the others killed by stop(). On PostgreSQL the first starts alone: it migrates the fresh database,
    // and lock/store/sql/schema.ts runs its CREATE TABLE IF NOT EXISTS before taking the advisory lock,
    // so two first starts can race ("type holdfast_schema_migrations already exists"; reported, not
    // this harness' to fix).
    const ports = await Promise.all(Array.from({ length: count }, () => freePort()));
    const own = await Promise.all(
      ports.map(async (port) => {
        const clockFile = path.join(workDir, `clock-offset-${port}.ms`);
        writeFileSync(clockFile, '0\n');
        const storeProxies = etcd ? await Promise.all(etcd.endpoints.map((url) => startBlackholeProxy({ host: '127.0.0.1', port: Number(new URL(url).port) }))) : [];
        const ownEnv: Record<string, string> = {
          [FAULT_CLOCK_OFFSET_FILE_ENV]: clockFile,
          ...(storeProxies.length > 0 ? { ETCD_ENDPOINTS: storeProxies.map((p) => `http://127.0.0.1:${p.port}`).join(',') } : {}),
        };
        return { clockFile, storeProxies, env: ownEnv };
      }),
    );
    const first = options.store === 'postgres' ? await Promise.allSettled([spawn(ports[0]!, own[0]!.env)]) : [];
    const started = [...first, ...(await Promise.allSettled(ports.slice(first.length).map((port, i) => spawn(port, own[i + first.length]!.env))))];
    for (const [i, outcome] of started.entries()) {
      if (outcome.status === 'rejected') {
        for (const proxy of own[i]!.storeProxies) await proxy.close();
        continue;
      }
      const proxy = await startBlackholeProxy({ host: '127.0.0.1', port: ports[i]! });
      instances.push({ label: String.fromCharCode(65 + i), proxy, url: `http://127.0.0.1:${proxy.port}`, server: outcome.value, port: ports[i]!, ...own[i]! });
    }
    const failed = started.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
  } catch (error) {
    await stop();
    throw error;
  }

  const kill = async (instance: Instance) => {
    instance.server.child.kill('SIGKILL');
    await instance.server.exited;
  };

  const faults = (): Record<string, FaultAction> => {
    const actions: Record<string, FaultAction> = {
      'pause-server': async (pick) => {
        const instance = instances[pick(instances.length)]!;
        instance.server.child.kill('SIGSTOP');
        return {
          target: instance.label,
          heal: async () => {
            instance.server.child.kill('SIGCONT');
          },
        };
      },
      'kill-server': async (pick) => {
        const instance = instances[pick(instances.length)]!;
        // A crash, then a supervisor's restart on the same port and data (the restart's own time adds to the outage).
        await kill(instance);
        return {
          target: instance.label,
          heal: async () => {
            instance.server = await spawn(instance.port, instance.env);
          },
        };
      },
      blackhole: async (pick) => {
        const instance = instances[pick(instances.length)]!;
        instance.proxy.blackhole();
        return { target: instance.label, heal: async () => instance.proxy.forward() };
      },
      delay: async (pick) => {
        const instance = instances[pick(instances.length)]!;
        const millis = 50 + pick(350);
        instance.proxy.delay(millis);
        return { target: `${instance.label} +${millis} ms`, heal: async () => instance.proxy.forward() };
      },
      'clock-offset': async (pick) => {
        // The server's own clock, moved while it serves: seconds to an hour, either way. Liveness is the
        // store's clock, so nothing a client sees may change but wait lengths.
        const instance = instances[pick(instances.length)]!;
        const magnitudes = [1_500, 7_000, 30_000, 3_600_000];
        const offset = (pick(2) === 0 ? -1 : 1) * magnitudes[pick(magnitudes.length)]!;
        writeFileSync(instance.clockFile, `${offset}\n`);
        return { target: `${instance.label} ${offset > 0 ? '+' : ''}${offset} ms`, heal: async () => writeFileSync(instance.clockFile, '0\n') };
      },
    };
    if (postgres) {
      const cluster = postgres;
      actions['store-restart'] = async (pick) => {
        const mode = pick(2) === 0 ? 'immediate' : 'fast';
        runPgProgram('pg_ctl', ['-D', cluster.dataDir, '-m', mode, '-w', 'stop']);
        return { target: `postgres (${mode})`, heal: async () => runPgProgram('pg_ctl', pgStartArgs(cluster.dataDir, cluster.port)) };
      };
    }
    if (etcd) {
      const cluster = etcd;
      if (cluster.members.length === 1) {
        actions['store-restart'] = async () => {
          const member = cluster.members[0]!;
          await cluster.kill(member.name);
          return { target: `etcd ${member.name}`, heal: () => cluster.restart(member.name) };
        };
      } else {
        actions['leader-kill'] = async () => {
          await reviveCrashedMembers(cluster);
          const leader = await cluster.waitForLeader();
          await cluster.kill(leader.name);
          return { target: `etcd leader ${leader.name}`, heal: () => cluster.restart(leader.name) };
        };
        actions['etcd-partition'] = async (pick) => {
          // One member cut from the other two (peer links black-holed both ways): the leader half the
          // time (a new one is elected on the majority side), else a follower (it falls behind).
          await reviveCrashedMembers(cluster);
          const leader = await cluster.waitForLeader();
          const member = pick(2) === 0 ? leader : cluster.members[pick(cluster.members.length)]!;
          await cluster.partition(member.name);
          return { target: `etcd ${member.name}${member.name === leader.name ? ' (leader)' : ''}`, heal: async () => cluster.heal() };
        };
      }
      actions['store-partition'] = async (pick) => {
        // One server cut from every etcd member (its own proxies black-holed); the others still reach etcd.
        const instance = instances[pick(instances.length)]!;
        for (const proxy of instance.storeProxies) proxy.blackhole();
        return {
          target: `${instance.label} from etcd`,
          heal: async () => {
            for (const proxy of instance.storeProxies) {
              proxy.reset();
              proxy.forward();
            }
          },
        };
      };
    }
    return actions;
  };

  return { store: options.store, instances, operatorToken, faults, stop };
}

/**
 * A member that exited by itself (no fault of ours kills one without restarting it) crashed: restart
 * it so the run goes on, and fail this fault with the crash's own words, so the report keeps them.
 */
async function reviveCrashedMembers(cluster: EtcdCluster): Promise<void> {
  const crashed = cluster.members.filter((m) => !m.running);
  if (crashed.length === 0) return;
  const words = crashed.map((m) => {
    const log = path.join(m.dataDir, '..', `${m.name}.log`);
    const lines = existsSync(log) ? readFileSync(log, 'utf8').split('\n') : [];
    const panic = lines.find((line) => /^panic|"level":"(panic|fatal)"/.test(line)) ?? lines.filter((l) => l.trim() !== '').at(-1) ?? 'no log';
    return `${m.name}: ${panic.slice(0, 300)}`;
  });
  for (const m of crashed) await cluster.restart(m.name);
  throw new Error(`etcd member(s) had exited by themselves, restarted: ${words.join(' | ')}`);
}
