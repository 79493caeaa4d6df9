/**
 * SDK round trips against a real in-process server (embedded store by
 * default; HOLDFAST_TEST_STORE=postgres for PostgreSQL). Prints, for an
 * uncontended key: acquire, release and acquire+release latency (p50/p95/p99)
 * as seen by the SDK; then the {a,b}/{b,a} acquireAll loop's throughput.
 *
 *   npx tsx bench/sdk-latency.ts [iterations=300]
 */
import { LockClient } from '../client/index.js';
import { startServer } from '../test/support/server.js';

const iterations = Number(process.argv[2] ?? 300);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function summary(name: string, samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const f = (n: number) => n.toFixed(2).padStart(7);
  return `${name.padEnd(28)} n=${samples.length}  p50 ${f(percentile(sorted, 50))} ms  p95 ${f(percentile(sorted, 95))} ms  p99 ${f(percentile(sorted, 99))} ms`;
}

const server = await startServer();
try {
  const client = new LockClient({ baseUrl: server.url });
  const session = await client.openSession({ owner: 'bench' });
  const acquire: number[] = [];
  const release: number[] = [];
  const heartbeatFree: number[] = [];
  for (let i = 0; i < iterations; i += 1) {
    const t0 = performance.now();
    const handle = await session.acquire(`bench/${i % 10}`);
    const t1 = performance.now();
    await session.release(handle!);
    const t2 = performance.now();
    acquire.push(t1 - t0);
    release.push(t2 - t1);
    heartbeatFree.push(t2 - t0);
  }
  console.log(`backend ${server.backend}, ${iterations} iterations, one session, uncontended`);
  console.log(summary('acquire (L4)', acquire));
  console.log(summary('release (L6)', release));
  console.log(summary('acquire + release', heartbeatFree));

  const rounds = Math.max(50, Math.floor(iterations / 2));
  const policy = { baseBackoffMillis: 2, maxBackoffMillis: 50, maxAttempts: 200 };
  const pair = async (keys: string[]) => {
    const s = await client.openSession({ owner: keys.join('+') });
    const latencies: number[] = [];
    for (let r = 0; r < rounds; r += 1) {
      const t0 = performance.now();
      const handles = await s.acquireAll(keys, { policy });
      latencies.push(performance.now() - t0);
      if (handles) await s.releaseAll(handles);
    }
    await s.close();
    return latencies;
  };
  const start = performance.now();
  const [ab, ba] = await Promise.all([pair(['pair/a', 'pair/b']), pair(['pair/b', 'pair/a'])]);
  const seconds = (performance.now() - start) / 1000;
  console.log(`acquireAll {a,b} vs {b,a}: ${rounds} rounds × 2 sessions in ${seconds.toFixed(1)} s (${((2 * rounds) / seconds).toFixed(0)} acquireAll+releaseAll/s)`);
  console.log(summary('acquireAll (contended)', [...ab, ...ba]));
  await session.close();
} finally {
  await server.stop();
}
