/**
 * The client's own CPU per acquire+release cycle, with nothing else in the
 * process: the server is a child process answering canned JSON of the
 * product's shapes (bench/lib/bare-servers.ts), so this process's CPU
 * (every thread, GC included) is the client's alone. Compares plain HTTP
 * (the bench's lean client, node:http) with the SDK on each transport:
 * its default (NodeHttpTransport), FetchTransport, and an undici Pool when
 * `undici` can be required (it is not a dependency: e.g.
 * `NODE_PATH=/tmp/undici/node_modules` after `npm install undici@6` there).
 *
 *   npx tsx bench/sdk-client-cpu.ts            # SDK_CPU_SECONDS=3, SDK_CPU_CONCURRENCY=1,16,64, SDK_CPU_ONLY=name part
 *
 * Loopback only. Cycles/s here are a client-bound ceiling, not the product's.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { LockClient } from '../client/client.js';
import type { LockSession } from '../client/session.js';
import { FetchTransport, decodeBody, type Transport, type TransportRequest, type TransportResponse } from '../client/transport.js';
import { startBareNodeHttpServer } from './lib/bare-servers.js';
import { JsonHttpClient } from './lib/http-json.js';
import { LeanHttpConnection } from './lib/lean-http.js';

const SECONDS = Number(process.env.SDK_CPU_SECONDS ?? 3);
const WARMUP_SECONDS = 1;
const CONCURRENCIES = (process.env.SDK_CPU_CONCURRENCY ?? '1,16,64').split(',').map(Number);


type Cycle = () => Promise<void>;
interface ClientKind {
  name: string;
  /** One cycle function per concurrent loop, and how to close what they opened. */
  open(url: string, concurrency: number): Promise<{ cycles: Cycle[]; close(): Promise<void> }>;
}

const LOCK = { ttlMillis: 30_000 };

function plain(name: string, connect: (url: string, concurrency: number) => Promise<{ request: LeanHttpConnection['request'] }[]>, close: (c: unknown[]) => void): ClientKind {
  return {
    name,
    async open(url, concurrency) {
      const connections = await connect(url, concurrency);
      const cycles = connections.map((connection, i) => async () => {
        const key = encodeURIComponent(`cpu-${i}`);
        const granted = await connection.request('POST', `/v1/locks/${key}/acquire`, { sessionId: 's', ttlMillis: 30_000 }, 'hfs_bench');
        const token = (granted.body as { fencingToken: string }).fencingToken;
        await connection.request('POST', `/v1/locks/${key}/release`, { sessionId: 's', fencingToken: token }, 'hfs_bench');
      });
      return { cycles, close: async () => close(connections) };
    },
  };
}

function sdk(name: string, transportFor: (url: string) => Transport | undefined): ClientKind {
  return {
    name,
    async open(url, concurrency) {
      const transport = transportFor(url);
      const client = new LockClient(transport ? { transport } : { baseUrl: url });
      const sessions: LockSession[] = [];
      for (let i = 0; i < concurrency; i += 1) sessions.push(await client.openSession({ ttlMillis: 60_000 }));
      const cycles = sessions.map((session, i) => async () => {
        const handle = await session.acquire(`cpu-${i}`, LOCK);
        if (handle === null) throw new Error('not granted');
        await session.release(handle);
      });
      return { cycles, close: async () => void (await Promise.all(sessions.map((s) => s.close()))) };
    },
  };
}

/** The slice of undici used here (it is not a dependency, so no types from it). */
interface UndiciPool {
  request(options: object): Promise<{ statusCode: number; headers: Record<string, string | string[] | undefined>; body: { text(): Promise<string> } }>;
}

/** An undici Pool per endpoint behind the SDK's Transport seam (what an optional-peer transport would be). */
class UndiciTransport implements Transport {
  readonly #pool: UndiciPool;

  constructor(undici: { Pool: new (url: string, options: object) => UndiciPool }, url: string) {
    this.#pool = new undici.Pool(url, { pipelining: 1 });
  }

  async send(request: TransportRequest): Promise<TransportResponse> {
    const payload = request.body === undefined ? undefined : JSON.stringify(request.body);
    const headers: Record<string, string> = { accept: 'application/json', ...request.headers };
    if (payload !== undefined) headers['content-type'] = 'application/json';
    const response = await this.#pool.request({ method: request.method, path: request.path, headers, body: payload, signal: request.signal });
    const body = decodeBody(await response.body.text());
    return {
      status: response.statusCode,
      header: (name) => {
        const value = response.headers[name.toLowerCase()];
        return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
      },
      body,
    };
  }
}

function loadUndici(): ConstructorParameters<typeof UndiciTransport>[0] | undefined {
  try {
    return createRequire(import.meta.url)('undici') as ConstructorParameters<typeof UndiciTransport>[0];
  } catch {
    return undefined;
  }
}

async function measure(kind: ClientKind, url: string, concurrency: number): Promise<string> {
  const { cycles, close } = await kind.open(url, concurrency);
  let counting = false;
  let done = 0;
  let stop = false;
  const loops = cycles.map(async (cycle) => {
    while (!stop) {
      await cycle();
      if (counting) done += 1;
    }
  });
  await new Promise((resolve) => setTimeout(resolve, WARMUP_SECONDS * 1000));
  const cpuFrom = process.cpuUsage();
  const from = performance.now();
  counting = true;
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  counting = false;
  const cpu = process.cpuUsage(cpuFrom);
  const elapsed = (performance.now() - from) / 1000;
  stop = true;
  await Promise.all(loops);
  await close();
  const cpuMillis = (cpu.user + cpu.system) / 1000;
  return `  c=${String(concurrency).padEnd(3)} ${kind.name.padEnd(22)} ${(done / elapsed).toFixed(0).padStart(6)} cycles/s  client CPU ${(cpuMillis / done).toFixed(3)} ms/cycle`;
}

async function main(): Promise<void> {
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--serve'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  const url = line.toString().trim();
  if (!url.startsWith('http://127.0.0.1:')) throw new Error(`bench server said ${url}`);
  const undici = loadUndici();
  const kinds: ClientKind[] = [
    plain('plain lean socket', (u, c) => Promise.all(Array.from({ length: c }, () => LeanHttpConnection.open(u))), (cs) => cs.forEach((c) => (c as LeanHttpConnection).close())),
    plain('plain node:http', async (u, c) => Array(c).fill(new JsonHttpClient(u, c)) as JsonHttpClient[], (cs) => (cs[0] as JsonHttpClient).close()),
    sdk('SDK default transport', () => undefined),
    sdk('SDK FetchTransport', (u) => new FetchTransport(u)),
    ...(undici ? [sdk('SDK undici Pool', (u) => new UndiciTransport(undici, u))] : []),
  ];
  // SDK_CPU_ONLY: rows whose name contains it (e.g. "SDK default" for a profile of one transport).
  const only = process.env.SDK_CPU_ONLY;
  if (only) kinds.splice(0, kinds.length, ...kinds.filter((kind) => kind.name.includes(only)));
  console.log(`client CPU per acquire+release, canned server in a child process; ${WARMUP_SECONDS} s warm-up + ${SECONDS} s per cell${undici ? '' : ' (undici not found: no undici row)'}`);
  try {
    for (const concurrency of CONCURRENCIES) {
      for (const kind of kinds) console.log(await measure(kind, url, concurrency));
    }
  } finally {
    child.stdin!.end();
  }
}

if (process.argv.includes('--serve')) {
  const server = await startBareNodeHttpServer();
  process.stdout.write(`${server.url}\n`);
  // The parent holds our stdin: when it ends (done, or crashed), so do we.
  process.stdin.resume();
  process.stdin.on('close', () => process.exit(0));
} else {
  await main();
}
