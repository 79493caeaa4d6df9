/**
 * CPU time used by this Node process (server, load worker and, for the
 * embedded store, PGlite) and by a PostgreSQL cluster (postmaster and every
 * backend). CPU milliseconds per cycle hold up on a busy shared machine where
 * cycles/s do not: other engineers' tests take wall time, not our CPU time.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Linux clock ticks per second (`getconf CLK_TCK`); 100 on every mainstream kernel. */
const TICKS_PER_SECOND = 100;

export interface CpuSnapshot {
  /** Every thread of this process. */
  nodeMillis: number;
  /** The main thread alone: the Holdfast server (and PGlite, which runs on it), not the load worker. */
  mainThreadMillis: number;
  postgresMillis: number | null;
}

export function nodeCpuMillis(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/** The main thread's CPU, from its /proc task entry (its thread id is the process id). */
export function mainThreadCpuMillis(): number {
  const fields = statFields(process.pid, `/proc/self/task/${process.pid}/stat`);
  if (!fields) throw new Error('cannot read the main thread\'s CPU time');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/**
 * The CPU of the thread that calls this, in ns resolution (schedstat's time on a
 * CPU, not stat's 10-ms ticks): a load worker reads its own — the SDK or HTTP
 * client under test, without the server beside it or the GC helper threads.
 */
export function currentThreadCpuMillis(): number {
  return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
}

/** Fields after the command name in /proc/PID/stat, which may itself contain spaces. */
function statFields(pid: number, file = `/proc/${pid}/stat`): string[] | null {
  try {
    const text = readFileSync(file, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null; // the process exited between listing and reading
  }
}

function childrenOf(parentPid: number): Map<number, number> {
  const ticks = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    if (fields && Number(fields[1]) === parentPid) ticks.set(Number(entry), Number(fields[11]) + Number(fields[12]));
  }
  return ticks;
}

/**
 * The postmaster's own and reaped children's CPU plus every live child's. A
 * backend exiting mid-read would be missed by both sums, so the read repeats
 * until the set of children is the same before and after the postmaster's.
 */
export function clusterCpuMillis(postmasterPid: number): number {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const before = childrenOf(postmasterPid);
    const own = statFields(postmasterPid);
    if (!own) throw new Error(`postmaster ${postmasterPid} is not running`);
    const after = childrenOf(postmasterPid);
    if (before.size !== after.size || [...before.keys()].some((pid) => !after.has(pid))) continue;
    // After the name: [0]=state [1]=ppid ... [11]=utime [12]=stime [13]=cutime [14]=cstime
    let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
    for (const childTicks of after.values()) ticks += childTicks;
    return (ticks * 1000) / TICKS_PER_SECOND;
  }
  throw new Error('postgres backends kept starting and exiting; cannot take a stable CPU reading');
}

export function cpuSnapshot(postmasterPid: number | null): CpuSnapshot {
  return {
    nodeMillis: nodeCpuMillis(),
    mainThreadMillis: mainThreadCpuMillis(),
    postgresMillis: postmasterPid === null ? null : clusterCpuMillis(postmasterPid),
  };
}

/** CPU time of one process (all its threads, not its children), e.g. a spawned server or etcd member. */
export function processCpuMillis(pid: number): number {
  const fields = statFields(pid);
  if (!fields) throw new Error(`process ${pid} is not running`);
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/**
 * Time a process's threads spent runnable but waiting for a CPU (run-queue wait), from
 * /proc/PID/task/TID/schedstat: on a machine with more runnable work than cores, this is
 * latency no code path of ours can remove.
 */
export function runQueueWaitMillis(pid: number): number {
  let nanos = 0;
  let tasks: string[] = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    throw new Error(`process ${pid} is not running`);
  }
  for (const tid of tasks) {
    try {
      nanos += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]);
    } catch {
      // the thread exited between listing and reading
    }
  }
  return nanos / 1e6;
}
