/**
 * `npm run bench:etcd` — the etcd store's two measured goals, on a real etcd
 * started here (single member, data dir on tmpfs when available):
 *
 * 1. Handoff latency on one hot key with 8 waiters (issue 4, criterion 9):
 *    time from the holder starting its release to the next waiter holding the
 *    grant, p50/p99, for the shared watch (the store's default), the per-call
 *    R + 1 watch (the measured alternative), and polling with core's backoff
 *    (10 ms floor + full jitter over 25·2^n ms, cap 500 ms; the path a server
 *    instance takes when the release happened on another instance) — with the
 *    cluster idle and with a background load of unrelated writes.
 * 2. Acquire+release cycles/s at concurrency 16 and 64 (criterion 10), the
 *    store against etcd3's own lock recipe (`client.lock(key)`), same etcd, same run.
 *
 * Bounded: every phase stops at a fixed count or time. Figures go to stdout.
 * Knobs: BENCH_HANDOFFS, BENCH_HOLD_MS, BENCH_REJOIN_MS, BENCH_WAITERS, BENCH_BG_WRITES,
 * BENCH_CYCLE_SECONDS, BENCH_SKIP_HANDOFF=1, BENCH_SKIP_CYCLES=1.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Etcd3 } from 'etcd3';
import { hashSessionToken, newSessionToken } from '../lock/core/session-token.js';
import { EtcdStore, type WaitShape } from '../lock/store/etcd/etcd-store.js';
import type { LockStore, SessionCredential } from '../lock/store/spi.js';
import { startEtcd } from '../test/support/etcd.js';

const WAITERS = Number(process.env.BENCH_WAITERS ?? 8);
const HANDOFFS = Number(process.env.BENCH_HANDOFFS ?? 300);
const HOLD_MS = Number(process.env.BENCH_HOLD_MS ?? 20);
/** After releasing, a worker pauses before contending again, so a handoff goes to a waiter, not back to the releaser. */
const REJOIN_MS = Number(process.env.BENCH_REJOIN_MS ?? 20);
const CYCLE_ROUNDS = 3;
const BACKGROUND_WRITES_PER_S = Number(process.env.BENCH_BG_WRITES ?? 400);
const CYCLE_SECONDS = Number(process.env.BENCH_CYCLE_SECONDS ?? 5);
const PHASE_TIMEOUT_MS = 120_000;

type WaitMode = WaitShape | 'polling';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function openStore(endpoints: string[], waitShape: WaitShape): Promise<EtcdStore> {
  const store = new EtcdStore({ endpoints, namespace: `bench-${randomUUID()}`, waitShape });
  await store.init();
  return store;
}

/** A session as core opens one (SPI v2): the store keeps only the token's hash. */
async function openBenchSession(store: LockStore): Promise<SessionCredential> {
  const credential = { sessionId: randomUUID(), tokenHash: hashSessionToken(newSessionToken()) };
  await store.openSession({ ...credential, owner: 'bench', ttlMillis: 60_000 });
  return credential;
}

/** Writes to unrelated keys at a steady rate until stopped: what moves etcd's revision on a busy cluster. */
function backgroundLoad(endpoints: string[], writesPerSecond: number): { stop(): Promise<number> } {
  const client = new Etcd3({ hosts: endpoints });
  let running = true;
  let written = 0;
  const tickMs = 10;
  const perTick = Math.max(1, Math.round((writesPerSecond * tickMs) / 1000));
  const loop = (async () => {
    let next = performance.now();
    while (running) {
      await Promise.all(Array.from({ length: perTick }, (_, i) => client.put(`/bench-background/${(written + i) % 1000}`).value('x').exec()));
      written += perTick;
      next += tickMs;
      const lag = next - performance.now();
      if (lag > 0) await sleep(lag);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      client.close();
      return written;
    },
  };
}

/** 8 waiters contend on one key; each grant is timed from the previous holder's release. */
async function handoffLatency(endpoints: string[], mode: WaitMode): Promise<number[]> {
  const store = await openStore(endpoints, mode === 'polling' ? 'shared' : mode);
  const key = 'hot';
  const latencies: number[] = [];
  let releaseStartedAt: number | null = null;
  let granted = 0;
  const deadline = Date.now() + PHASE_TIMEOUT_MS;
  const never = new AbortController().signal;

  const worker = async () => {
    const session = await openBenchSession(store);
    while (granted < HANDOFFS && Date.now() < deadline) {
      let attempt = 0;
      for (;;) {
        const result = await store.tryAcquire({ key, session, ttlMillis: 30_000 });
        if (result.kind === 'granted') {
          if (releaseStartedAt !== null) latencies.push(performance.now() - releaseStartedAt);
          granted += 1;
          await sleep(HOLD_MS);
          releaseStartedAt = performance.now();
          await store.release({ key, session, fencingToken: result.grant.fencingToken });
          await sleep(REJOIN_MS);
          break;
        }
        if (result.kind !== 'held' || granted >= HANDOFFS || Date.now() >= deadline) return;
        if (mode === 'polling') {
          const cap = Math.min(500, 25 * 2 ** Math.min(attempt, 20));
          await sleep(10 + Math.floor(Math.random() * (cap + 1)));
          attempt += 1;
        } else {
          const waited = await store.waitForRelease({ key, observedRevision: result.observedRevision, timeoutMillis: 5_000, signal: never });
          if (waited.outcome === 'fallback') throw new Error(`unexpected fallback: ${waited.cause}`);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: WAITERS }, () => worker()));
  await store.close();
  return latencies.sort((a, b) => a - b);
}

/** Acquire+release cycles/s: `workers` sessions, each on its own key, for CYCLE_SECONDS. */
async function storeCycles(endpoints: string[], workers: number): Promise<number> {
  const store = await openStore(endpoints, 'shared');
  let cycles = 0;
  const stopAt = performance.now() + CYCLE_SECONDS * 1000;
  await Promise.all(
    Array.from({ length: workers }, async (_, index) => {
      const session = await openBenchSession(store);
      while (performance.now() < stopAt) {
        const result = await store.tryAcquire({ key: `cycle-${index}`, session, ttlMillis: 30_000 });
        if (result.kind !== 'granted') throw new Error(`unexpected ${result.kind}`);
        await store.release({ key: `cycle-${index}`, session, fencingToken: result.grant.fencingToken });
        cycles += 1;
      }
    }),
  );
  await store.close();
  return cycles / CYCLE_SECONDS;
}

/** The same loop on etcd3's lock recipe (a fresh lease per acquire, revoked on release). */
async function recipeCycles(endpoints: string[], workers: number): Promise<number> {
  const client = new Etcd3({ hosts: endpoints });
  let cycles = 0;
  const stopAt = performance.now() + CYCLE_SECONDS * 1000;
  const prefix = `/bench-recipe-${randomUUID()}/`;
  await Promise.all(
    Array.from({ length: workers }, async (_, index) => {
      while (performance.now() < stopAt) {
        const lock = client.lock(`${prefix}${index}`).ttl(30);
        await lock.acquire();
        await lock.release();
        cycles += 1;
      }
    }),
  );
  client.close();
  return cycles / CYCLE_SECONDS;
}

const format = (ms: number) => `${ms.toFixed(1)} ms`;

/** CPU milliseconds used so far by this process and by etcd: a cost per cycle that does not depend on how busy the machine is. */
function cpuMillis(etcdPid: number): { node: number; etcd: number } {
  const usage = process.cpuUsage();
  const fields = readFileSync(`/proc/${etcdPid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (100/s)
  return { node: (usage.user + usage.system) / 1000, etcd: ticks * 10 };
}

/** Runs a cycles phase and reports cycles/s plus node and etcd CPU ms per cycle. */
async function measured(etcdPid: number, run: () => Promise<number>): Promise<{ rate: number; nodeCpu: number; etcdCpu: number }> {
  const before = cpuMillis(etcdPid);
  const rate = await run();
  const after = cpuMillis(etcdPid);
  const cycles = rate * CYCLE_SECONDS;
  return { rate, nodeCpu: (after.node - before.node) / cycles, etcdCpu: (after.etcd - before.etcd) / cycles };
}

async function main(): Promise<void> {
  const etcd = await startEtcd();
  try {
    console.log(`etcd ${etcd.endpoints[0]} | ${WAITERS} waiters, ${HANDOFFS} handoffs, hold ${HOLD_MS} ms, rejoin ${REJOIN_MS} ms, background ${BACKGROUND_WRITES_PER_S} writes/s`);
    console.log('\n== handoff latency, one hot key (release start → next grant) ==');
    console.log('load        mode       p50        p99        n');
    for (const loaded of process.env.BENCH_SKIP_HANDOFF === '1' ? [] : [false, true]) {
      for (const mode of ['shared', 'per-call', 'polling'] as const) {
        const load = loaded ? backgroundLoad(etcd.endpoints, BACKGROUND_WRITES_PER_S) : null;
        const started = performance.now();
        const latencies = await handoffLatency(etcd.endpoints, mode);
        const seconds = (performance.now() - started) / 1000;
        const written = load ? await load.stop() : 0;
        const rate = loaded ? ` (background ${(written / seconds).toFixed(0)} writes/s)` : '';
        console.log(
          `${(loaded ? 'background' : 'idle').padEnd(11)} ${mode.padEnd(10)} ${format(percentile(latencies, 50)).padEnd(10)} ${format(percentile(latencies, 99)).padEnd(10)} ${latencies.length}${rate}`,
        );
      }
    }

    if (process.env.BENCH_SKIP_CYCLES === '1') return;
    console.log(`\n== acquire+release cycles/s, one key per worker, ${CYCLE_SECONDS} s per run, median of ${CYCLE_ROUNDS} alternating runs ==`);
    console.log('concurrency  holdfast-store  etcd3 client.lock()  ratio   CPU ms/cycle node+etcd (holdfast vs recipe)');
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const pid = etcd.member.pid!;
    for (const workers of [16, 64]) {
      const ours: Array<Awaited<ReturnType<typeof measured>>> = [];
      const recipe: Array<Awaited<ReturnType<typeof measured>>> = [];
      for (let round = 0; round < CYCLE_ROUNDS; round += 1) {
        ours.push(await measured(pid, () => storeCycles(etcd.endpoints, workers)));
        recipe.push(await measured(pid, () => recipeCycles(etcd.endpoints, workers)));
      }
      const [a, b] = [median(ours.map((r) => r.rate)), median(recipe.map((r) => r.rate))];
      const cpu = (runs: typeof ours) => `${median(runs.map((r) => r.nodeCpu)).toFixed(2)}+${median(runs.map((r) => r.etcdCpu)).toFixed(2)}`;
      console.log(
        `${String(workers).padEnd(12)} ${a.toFixed(0).padEnd(15)} ${b.toFixed(0).padEnd(20)} ${(a / b).toFixed(2)}x   ${cpu(ours)} vs ${cpu(recipe)}   (runs: ${ours.map((r) => r.rate.toFixed(0)).join('/')} vs ${recipe.map((r) => r.rate.toFixed(0)).join('/')})`,
      );
    }
  } finally {
    await etcd.stop();
  }
}

await main();
