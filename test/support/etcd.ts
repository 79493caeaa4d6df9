/**
 * Real etcd for tests and benches: a single node (`startEtcd`) or a cluster
 * (`startEtcdCluster`) on free loopback ports, each member with its own temp
 * data dir, started from the Debian `etcd` binary (scripts/ensure-deps.sh
 * installs it). Members can be killed, restarted and asked who leads.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { startPeerProxy, type PeerProxy } from './etcd-peer-proxy.js';

const ETCD_BINARY = process.env.ETCD_BINARY ?? 'etcd';
// A member is healthy 1–3 s after its start here; the deadline only bounds one that never gets there.
const READY_TIMEOUT_MS = 60_000;

export interface EtcdMember {
  readonly name: string;
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly dataDir: string;
  /** True while the member's process runs. */
  readonly running: boolean;
  /** The member's process id while it runs (benches read its CPU time from /proc). */
  readonly pid: number | null;
}

export interface EtcdCluster {
  /** Client endpoints of every member ("http://127.0.0.1:PORT"). */
  readonly endpoints: string[];
  readonly members: readonly EtcdMember[];
  /** SIGKILL a member (no clean shutdown) and wait for its process to exit. */
  kill(name: string): Promise<void>;
  /** Start a killed member again on its old ports and data dir; resolves when it is healthy. */
  restart(name: string): Promise<void>;
  /** The member every running member agrees leads, or null while there is none. */
  findLeader(): Promise<EtcdMember | null>;
  /** Resolves once the running members agree on a leader. */
  waitForLeader(timeoutMs?: number): Promise<EtcdMember>;
  /**
   * Only with `peerProxies`: cut every peer link between `name` and the other members (both ways),
   * connections left open and silent; `heal()` restores them.
   */
  partition(name: string): Promise<void>;
  heal(): void;
  stop(): Promise<void>;
}

export interface EtcdNode {
  readonly endpoints: string[];
  readonly member: EtcdMember;
  kill(): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** A free loopback port, found by binding port 0 (the machine is shared). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        reject(new Error('could not read the bound port'));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}

/** tmpfs when present: fsync on a shared disk would make every test pay for disk latency. */
function dataRoot(): string {
  return existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
}

class ManagedMember implements EtcdMember {
  process: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();

  constructor(
    readonly name: string,
    readonly clientUrl: string,
    readonly peerUrl: string,
    readonly dataDir: string,
    private readonly args: string[],
  ) {}

  get running(): boolean {
    return this.process !== null;
  }

  get pid(): number | null {
    return this.process?.pid ?? null;
  }

  start(): void {
    if (this.process) throw new Error(`etcd member ${this.name} already runs`);
    const log = openSync(join(this.dataDir, '..', `${this.name}.log`), 'a');
    const child = spawn(ETCD_BINARY, this.args, { stdio: ['ignore', log, log] });
    closeSync(log);
    liveChildren.add(child);
    this.process = child;
    this.exited = new Promise((resolve) => {
      child.once('exit', () => {
        liveChildren.delete(child);
        if (this.process === child) this.process = null;
        resolve();
      });
    });
  }

  async signal(sig: NodeJS.Signals, graceMs: number): Promise<void> {
    const child = this.process;
    if (!child) return;
    child.kill(sig);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  async waitHealthy(): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let lastProblem = 'not started';
    while (Date.now() < deadline) {
      if (!this.process) throw new Error(`etcd member ${this.name} exited during start; see ${this.dataDir}/../${this.name}.log`);
      try {
        const response = await fetch(`${this.clientUrl}/health`, { signal: AbortSignal.timeout(1_000) });
        const body = (await response.json()) as { health?: string };
        if (body.health === 'true') return;
        lastProblem = JSON.stringify(body);
      } catch (error) {
        lastProblem = String(error);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`etcd member ${this.name} not healthy after ${READY_TIMEOUT_MS} ms: ${lastProblem}`);
  }
}

/** Children still running when the test process exits are killed, never leaked. */
const liveChildren = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of liveChildren) child.kill('SIGKILL');
});

async function memberStatus(member: EtcdMember): Promise<{ memberId: string; leaderId: string } | null> {
  const client = new Etcd3({ hosts: member.clientUrl, dialTimeout: 1_000, defaultCallOptions: () => ({ deadline: Date.now() + 1_000 }) });
  try {
    const status = await client.maintenance.status();
    return { memberId: String(status.header.member_id), leaderId: String(status.leader) };
  } catch {
    return null;
  } finally {
    client.close();
  }
}

export interface StartEtcdOptions {
  /**
   * Where the members' data dirs go. Default: tmpfs when present (fast tests). A bench comparing
   * durable systems puts them on disk, where etcd's fsync per commit costs what it costs in production.
   */
  dataRoot?: string;
}

/** A port picked free was taken by another process before etcd bound it (pick-then-bind races under parallel tests). */
class PortTakenError extends Error {}

/** Attempts at starting a cluster when a port it picked was taken meanwhile: each attempt picks new ports. */
const PORT_RACE_ATTEMPTS = 3;

export async function startEtcdCluster(size = 3, options: { peerProxies?: boolean } & StartEtcdOptions = {}): Promise<EtcdCluster> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startEtcdClusterOnce(size, options);
    } catch (error) {
      if (!(error instanceof PortTakenError) || attempt >= PORT_RACE_ATTEMPTS) throw error;
    }
  }
}

async function startEtcdClusterOnce(size: number, options: { peerProxies?: boolean } & StartEtcdOptions): Promise<EtcdCluster> {
  const root = mkdtempSync(join(options.dataRoot ?? dataRoot(), 'holdfast-etcd-'));
  const specs: Array<{ name: string; clientPort: number; peerPort: number; listenPeerPort: number }> = [];
  const proxies = new Map<string, PeerProxy>();
  for (let i = 0; i < size; i += 1) {
    const name = `m${i}`;
    const listenPeerPort = await freePort();
    // With peer proxies, the member list names the proxy; the member listens behind it.
    const proxy = options.peerProxies ? await startPeerProxy({ host: '127.0.0.1', port: listenPeerPort }) : undefined;
    if (proxy) proxies.set(name, proxy);
    specs.push({ name, clientPort: await freePort(), peerPort: proxy?.port ?? listenPeerPort, listenPeerPort });
  }
  const initialCluster = specs.map((s) => `${s.name}=http://127.0.0.1:${s.peerPort}`).join(',');
  const token = `holdfast-test-${process.pid}-${Date.now()}`;
  const members = specs.map((s) => {
    const clientUrl = `http://127.0.0.1:${s.clientPort}`;
    const peerUrl = `http://127.0.0.1:${s.peerPort}`;
    const dataDir = join(root, s.name);
    const args = [
      `--name=${s.name}`,
      `--data-dir=${dataDir}`,
      `--listen-client-urls=${clientUrl}`,
      `--advertise-client-urls=${clientUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${s.listenPeerPort}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=${initialCluster}`,
      `--initial-cluster-token=${token}`,
      '--initial-cluster-state=new',
      '--logger=zap',
      '--log-outputs=stderr',
      '--log-level=warn',
    ];
    return new ManagedMember(s.name, clientUrl, peerUrl, dataDir, args);
  });
  for (const member of members) member.start();
  try {
    await Promise.all(members.map((m) => m.waitHealthy()));
  } catch (error) {
    await Promise.all(members.map((m) => m.signal('SIGKILL', 0)));
    await Promise.all([...proxies.values()].map((p) => p.close()));
    const logs = specs.map((spec) => {
      try {
        return readFileSync(join(root, `${spec.name}.log`), 'utf8');
      } catch {
        return '';
      }
    });
    rmSync(root, { recursive: true, force: true });
    if (logs.some((log) => log.includes('address already in use'))) throw new PortTakenError(`an etcd port was taken before it bound: ${(error as Error).message}`);
    throw error;
  }

  const byName = (name: string): ManagedMember => {
    const member = members.find((m) => m.name === name);
    if (!member) throw new Error(`no etcd member named ${name}`);
    return member;
  };

  const findLeader = async (): Promise<EtcdMember | null> => {
    const running = members.filter((m) => m.running);
    const statuses = await Promise.all(running.map((m) => memberStatus(m)));
    const leaderIds = new Set(statuses.map((s) => s?.leaderId ?? 'unknown'));
    if (leaderIds.size !== 1 || leaderIds.has('unknown') || leaderIds.has('0')) return null;
    const [leaderId] = [...leaderIds];
    const index = statuses.findIndex((s) => s?.memberId === leaderId);
    return index >= 0 ? (running[index] ?? null) : null;
  };

  return {
    endpoints: members.map((m) => m.clientUrl),
    members,
    kill: (name) => byName(name).signal('SIGKILL', 0),
    restart: async (name) => {
      const member = byName(name);
      member.start();
      await member.waitHealthy();
    },
    findLeader,
    // An election takes 1–1.5 s here (election timeout 1 s); the deadline only bounds a cluster that never elects.
    waitForLeader: async (timeoutMs = 60_000) => {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const leader = await findLeader();
        if (leader) return leader;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`no etcd leader within ${timeoutMs} ms`);
    },
    partition: async (name) => {
      if (proxies.size === 0) throw new Error('partition needs startEtcdCluster(n, { peerProxies: true })');
      byName(name);
      const client = new Etcd3({ hosts: members.filter((m) => m.running).map((m) => m.clientUrl) });
      let id: string | undefined;
      try {
        const list = await client.cluster.memberList({});
        const found = list.members.find((m) => m.name === name);
        if (found) id = BigInt(found.ID).toString(16);
      } finally {
        client.close();
      }
      if (!id) throw new Error(`etcd member ${name} not in the member list`);
      for (const [member, proxy] of proxies) proxy.cut(member === name ? 'all' : new Set([id]));
    },
    heal: () => {
      for (const proxy of proxies.values()) proxy.heal();
    },
    stop: async () => {
      await Promise.all(members.map((m) => m.signal('SIGTERM', 5_000)));
      await Promise.all([...proxies.values()].map((p) => p.close()));
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** One etcd member: what unit tests, the HTTP suite on etcd and most benches need. */
export async function startEtcd(options: StartEtcdOptions = {}): Promise<EtcdNode> {
  const cluster = await startEtcdCluster(1, options);
  const member = cluster.members[0];
  if (!member) throw new Error('etcd cluster of one has no member');
  return {
    endpoints: cluster.endpoints,
    member,
    kill: () => cluster.kill(member.name),
    restart: () => cluster.restart(member.name),
    stop: () => cluster.stop(),
  };
}
