/**
 * `npm run bench:etcd-calls` — what one etcd request costs the calling Node process, the floor
 * under every Holdfast/etcd request (issue 22: why etcd at c=1 trails etcd3's `client.lock()`,
 * and why the etcd store's server CPU per cycle at c=1 is ~5x its c=64 figure).
 *
 * 1. One-put Txn, closed loop at c=1 and c=64, on a real etcd started here: through etcd3
 *    (`client.kv.txn`, what the store calls) and through the same grpc-js client with etcd3's
 *    wrapper (connection pool, retry policy) bypassed. Client CPU per call and mean latency.
 * 2. A control with no etcd in it: a plain node:http server in a child process answering at
 *    once, or after a 1 ms timer (the idle gap an etcd round trip leaves). Server and client
 *    CPU per request: how much of a low-concurrency figure is the cost of waking from idle.
 *
 * Cells interleaved, two rounds (the first warms the JIT); figures to stdout.
 * Knobs: BENCH_CALL_SECONDS (per cell, default 3).
 */
import { fork } from 'node:child_process';
import { createServer, request, Agent } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Metadata } from '@grpc/grpc-js';
import { Etcd3, type ITxnRequest } from 'etcd3';
import { startEtcd } from '../test/support/etcd.js';

const SECONDS = Number(process.env.BENCH_CALL_SECONDS ?? 3);
const CONCURRENCY = [1, 64];

interface Cell {
  calls: number;
  meanMillis: number;
  clientCpuMillisPerCall: number;
}

async function closedLoop(concurrency: number, call: (worker: number) => Promise<unknown>): Promise<Cell> {
  let calls = 0;
  const end = Date.now() + SECONDS * 1000;
  const cpuAt = process.cpuUsage();
  const startedAt = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      while (Date.now() < end) {
        await call(worker);
        calls += 1;
      }
    }),
  );
  const cpu = process.cpuUsage(cpuAt);
  return {
    calls,
    meanMillis: ((performance.now() - startedAt) * concurrency) / calls,
    clientCpuMillisPerCall: (cpu.user + cpu.system) / 1000 / calls,
  };
}

const putTxn = (worker: number): ITxnRequest => ({
  compare: [],
  success: [{ request_put: { key: Buffer.from(`bench/call-cost/${worker}`), value: Buffer.from('v') } }],
  failure: [],
});

/** The grpc-js KV client etcd3 itself calls through (not a public etcd3 API: a bench-only reach-in). */
function rawKvTxn(client: Etcd3): (request: ITxnRequest) => Promise<unknown> {
  type Callback = (error: Error | null, response: unknown) => void;
  const pool = (client as unknown as { pool: { hosts: Array<{ getServiceClient(name: string): { txn(r: ITxnRequest, m: Metadata, o: object, cb: Callback): void } }> } }).pool;
  const kv = pool.hosts[0]!.getServiceClient('KV');
  const metadata = new Metadata();
  return (txn) => new Promise((resolve, reject) => kv.txn(txn, metadata, {}, (error, response) => (error ? reject(error) : resolve(response))));
}

async function etcdCalls(): Promise<string[]> {
  const etcd = await startEtcd();
  const client = new Etcd3({ hosts: etcd.endpoints });
  const lines: string[] = [];
  try {
    await client.put('bench/call-cost/warm').value('x');
    const raw = rawKvTxn(client);
    const paths: Array<[string, (worker: number) => Promise<unknown>]> = [
      ['etcd3 client.kv.txn', (w) => client.kv.txn(putTxn(w))],
      ['grpc-js, etcd3 wrapper bypassed', (w) => raw(putTxn(w))],
    ];
    for (const round of [1, 2]) {
      for (const concurrency of CONCURRENCY) {
        for (const [name, call] of paths) {
          const cell = await closedLoop(concurrency, call);
          lines.push(
            `| ${round} | ${name} | ${concurrency} | ${Math.round(cell.calls / SECONDS).toLocaleString('en-US')} | ${cell.meanMillis.toFixed(3)} | ${cell.clientCpuMillisPerCall.toFixed(3)} |`,
          );
        }
      }
    }
  } finally {
    client.close();
    await etcd.stop();
  }
  return lines;
}

/** The child: a plain node:http server that answers after `delay` ms (0: at once), and reports its CPU on request. */
function serveControl(): void {
  const delay = Number(process.env.BENCH_CONTROL_DELAY_MS ?? 0);
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const answer = () => res.end('{"fencingToken":"1"}');
      if (delay > 0) setTimeout(answer, delay);
      else answer();
    });
  });
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
  process.on('message', () => {
    const cpu = process.cpuUsage();
    process.send!({ cpuMillis: (cpu.user + cpu.system) / 1000 });
  });
}

async function controlCalls(): Promise<string[]> {
  const lines: string[] = [];
  for (const round of [1, 2]) {
    for (const delay of [0, 1]) {
      const child = fork(new URL(import.meta.url), ['--control'], { env: { ...process.env, BENCH_CONTROL_DELAY_MS: String(delay) }, execArgv: process.execArgv });
      try {
        const next = () => new Promise<{ port?: number; cpuMillis?: number }>((resolve) => child.once('message', resolve as (m: unknown) => void));
        const { port } = await next();
        const serverCpu = async () => {
          const answer = next();
          child.send('cpu');
          return (await answer).cpuMillis!;
        };
        const agent = new Agent({ keepAlive: true, maxSockets: 64 });
        const post = () =>
          new Promise<void>((resolve, reject) => {
            const req = request({ host: '127.0.0.1', port, path: '/', method: 'POST', agent }, (res) => {
              res.resume();
              res.on('end', resolve);
            });
            req.on('error', reject);
            req.end('{}');
          });
        for (const concurrency of CONCURRENCY) {
          const before = await serverCpu();
          const cell = await closedLoop(concurrency, post);
          const server = ((await serverCpu()) - before) / cell.calls;
          lines.push(
            `| ${round} | node:http, answer ${delay === 0 ? 'at once' : 'after a 1 ms timer'} | ${concurrency} | ${Math.round(cell.calls / SECONDS).toLocaleString('en-US')} | ${cell.meanMillis.toFixed(3)} | ${server.toFixed(3)} | ${cell.clientCpuMillisPerCall.toFixed(3)} |`,
          );
        }
        agent.destroy();
      } finally {
        child.kill();
      }
    }
  }
  return lines;
}

if (process.argv.includes('--control')) {
  serveControl();
} else {
  const load = (await import('node:os')).loadavg().map((l) => l.toFixed(1)).join(' ');
  console.log(`# npm run bench:etcd-calls (${new Date().toISOString()}, load ${load}, ${SECONDS} s cells)\n`);
  console.log('| round | one-put Txn through | c | calls/s | mean ms | client CPU ms/call |\n| --- | --- | --- | --- | --- | --- |');
  for (const line of await etcdCalls()) console.log(line);
  console.log('\n| round | control (no etcd) | c | requests/s | mean ms | server CPU ms/request | client CPU ms/request |\n| --- | --- | --- | --- | --- | --- | --- |');
  for (const line of await controlCalls()) console.log(line);
}
