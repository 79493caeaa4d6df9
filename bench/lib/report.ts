/** Renders bench figures as markdown tables (printed and committed) and writes the result files. */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { LatencySummary } from './stats.js';

/**
 * raw-postgres: INSERT … ON CONFLICT DO NOTHING RETURNING + DELETE from a pg pool.
 * raw-coalesced: the same rows through the multi-row batching prototype.
 * store-postgres: Holdfast's SqlLockStore called directly (its SQL, no HTTP, no core).
 * http-postgres / http-embedded / http-etcd: the full product over HTTP, from a minimal client (plain HTTP).
 * sdk-postgres / sdk-embedded / sdk-etcd: the full product through @holdfast/client, as users take locks.
 * sdk-fetch-postgres: sdk-postgres with the SDK on its old FetchTransport (the global fetch).
 * sdk-nodehttp-postgres: sdk-postgres with the SDK on NodeHttpTransport (node:http; its http: default before stop 42).
 * http-etcd-unbatched: http-etcd with every acquire its own etcd txn (no group commit).
 * etcd-client-lock: etcd3's lock recipe, in the load worker.
 * bare-node-http / bare-fastify: canned answers from node:http / Fastify, no store — the HTTP ceiling.
 */
export type PathName =
  | 'raw-postgres'
  | 'raw-coalesced'
  | 'store-postgres'
  | 'http-postgres'
  | 'http-embedded'
  | 'http-etcd'
  | 'http-etcd-unbatched'
  | 'sdk-postgres'
  | 'sdk-embedded'
  | 'sdk-etcd'
  | 'sdk-fetch-postgres'
  | 'sdk-nodehttp-postgres'
  | 'etcd-client-lock'
  | 'handoff-postgres'
  /** Issue 23 through the SDK, every worker on one key: a semaphore (limit N), or shared grants. */
  | 'sdk-semaphore-postgres'
  | 'sdk-semaphore-embedded'
  | 'sdk-semaphore-etcd'
  | 'sdk-shared-postgres'
  | 'sdk-shared-embedded'
  | 'sdk-shared-etcd'
  /** The ceiling of any HTTP design here: canned answers, no store (bench/lib/bare-servers.ts). */
  | 'bare-node-http'
  | 'bare-fastify';

export interface CellResult extends LatencySummary {
  path: PathName;
  concurrency: number;
  /** Failed cycles by answer, e.g. `acquire 409 LOCK_CONTENDED`. */
  errors: Record<string, number>;
  /**
   * CPU ms per counted cycle: the main thread (the Holdfast server, and PGlite on the
   * embedded store; idle on raw cells), the rest of this process (the load worker
   * thread, GC and libuv helpers), and the PostgreSQL cluster (postmaster + backends).
   */
  cpuMillisPerCycle: {
    serverThread: number;
    otherThreads: number;
    postgres: number | null;
    /** The load worker's own thread alone (part of otherThreads): on http and sdk rows, the client's CPU. */
    clientThread?: number | null;
  };
  loadAverage1m: number;
  /** raw-coalesced only: mean rows per statement. */
  meanBatchSize?: number;
}

export interface Ratio {
  concurrency: number;
  httpPostgres: number;
  rawPostgres: number;
  /** Diagnostic rows, when measured: the store's SQL alone, and the coalescing prototype, each ÷ raw. */
  storeOverRaw: number | null;
  coalescedOverRaw: number | null;
  /** HTTP-postgres cycles/s ÷ raw-postgres cycles/s. */
  throughputRatio: number;
  /** Raw CPU ms/cycle ÷ HTTP-postgres CPU ms/cycle (all threads + postgres): the ratio a CPU-bound machine tends to. */
  cpuCostRatio: number;
}

const fixed = (value: number | null, digits: number) => (value === null || Number.isNaN(value) ? '—' : value.toFixed(digits));

/** A markdown table with padded columns (also used by the peers bench). */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

function errorText(errors: Record<string, number>): string {
  const entries = Object.entries(errors);
  return entries.length === 0 ? '0' : entries.map(([what, n]) => `${n}× ${what}`).join('; ');
}

/** `backend`: whose process CPU the backend column holds (the postgres cluster, or the etcd member). */
export function cellTable(cells: CellResult[], backend: 'postgres' | 'etcd' = 'postgres'): string {
  return table(
    ['c', 'path', 'cycles/s', 'p50 ms', 'p99 ms', 'cycles', 'failed', 'CPU ms/cycle: server thread', 'load worker + other', 'of which client thread', backend, 'load 1m'],
    cells.map((c) => [
      String(c.concurrency),
      c.path,
      fixed(c.cyclesPerSecond, 0),
      fixed(c.p50Millis, 2),
      fixed(c.p99Millis, 2),
      String(c.cycles),
      errorText(c.errors) + (c.meanBatchSize !== undefined ? ` (${c.meanBatchSize.toFixed(1)} rows/statement)` : ''),
      fixed(c.cpuMillisPerCycle.serverThread, 3),
      fixed(c.cpuMillisPerCycle.otherThreads, 3),
      fixed(c.cpuMillisPerCycle.clientThread ?? null, 3),
      fixed(c.cpuMillisPerCycle.postgres, 3),
      fixed(c.loadAverage1m, 2),
    ]),
  );
}

export function ratioTable(ratios: Ratio[]): string {
  return table(
    ['c', 'HTTP-postgres cycles/s', 'raw-postgres cycles/s', 'ratio HTTP/raw', 'CPU-cost ratio raw/HTTP', 'store direct / raw', 'raw coalesced / raw'],
    ratios.map((r) => [
      String(r.concurrency),
      fixed(r.httpPostgres, 0),
      fixed(r.rawPostgres, 0),
      `${fixed(r.throughputRatio, 2)}×`,
      `${fixed(r.cpuCostRatio, 2)}×`,
      r.storeOverRaw === null ? '—' : `${fixed(r.storeOverRaw, 2)}×`,
      r.coalescedOverRaw === null ? '—' : `${fixed(r.coalescedOverRaw, 2)}×`,
    ]),
  );
}

export function ratios(cells: CellResult[]): Ratio[] {
  const byConcurrency = new Map<number, Partial<Record<PathName, CellResult>>>();
  for (const cell of cells) byConcurrency.set(cell.concurrency, { ...byConcurrency.get(cell.concurrency), [cell.path]: cell });
  const totalCpu = (c: CellResult) =>
    c.cpuMillisPerCycle.serverThread + c.cpuMillisPerCycle.otherThreads + (c.cpuMillisPerCycle.postgres ?? 0);
  return [...byConcurrency.entries()].flatMap(([concurrency, paths]) => {
    const http = paths['http-postgres'];
    const raw = paths['raw-postgres'];
    if (!http || !raw) return [];
    const over = (cell: CellResult | undefined) => (cell ? cell.cyclesPerSecond / raw.cyclesPerSecond : null);
    return [
      {
        concurrency,
        httpPostgres: http.cyclesPerSecond,
        rawPostgres: raw.cyclesPerSecond,
        storeOverRaw: over(paths['store-postgres']),
        coalescedOverRaw: over(paths['raw-coalesced']),
        throughputRatio: http.cyclesPerSecond / raw.cyclesPerSecond,
        cpuCostRatio: totalCpu(raw) / totalCpu(http),
      },
    ];
  });
}

/** Each SDK row beside the plain-HTTP row of the same store and concurrency (issue 22's acceptance figures). */
export interface SdkComparison {
  concurrency: number;
  store: 'postgres' | 'embedded' | 'etcd';
  sdkCyclesPerSecond: number;
  httpCyclesPerSecond: number;
  /** SDK ÷ plain HTTP cycles/s (target ≥ 0.85 at c=16/64). */
  throughputRatio: number;
  /** SDK ÷ plain HTTP p50 (target ≤ 1.15 at c=1). */
  p50Ratio: number;
  /** Client-thread CPU ms per cycle (SDK target ≤ 0.3 at c=16/64). */
  sdkClientMillis: number | null;
  httpClientMillis: number | null;
}

export function sdkComparisons(cells: CellResult[]): SdkComparison[] {
  const stores = ['postgres', 'embedded', 'etcd'] as const;
  return cells.flatMap((sdk) => {
    const store = stores.find((name) => sdk.path === `sdk-${name}`);
    const http = store && cells.find((c) => c.path === `http-${store}` && c.concurrency === sdk.concurrency);
    if (!store || !http) return [];
    return [
      {
        concurrency: sdk.concurrency,
        store,
        sdkCyclesPerSecond: sdk.cyclesPerSecond,
        httpCyclesPerSecond: http.cyclesPerSecond,
        throughputRatio: sdk.cyclesPerSecond / http.cyclesPerSecond,
        p50Ratio: sdk.p50Millis / http.p50Millis,
        sdkClientMillis: sdk.cpuMillisPerCycle.clientThread ?? null,
        httpClientMillis: http.cpuMillisPerCycle.clientThread ?? null,
      },
    ];
  });
}

export function sdkComparisonTable(rows: SdkComparison[]): string {
  return table(
    ['c', 'store', 'SDK cycles/s', 'plain HTTP cycles/s', 'SDK ÷ HTTP cycles/s', 'SDK ÷ HTTP p50', 'client CPU ms/cycle: SDK', 'plain HTTP'],
    rows.map((r) => [
      String(r.concurrency),
      r.store,
      fixed(r.sdkCyclesPerSecond, 0),
      fixed(r.httpCyclesPerSecond, 0),
      `${fixed(r.throughputRatio, 2)}×`,
      `${fixed(r.p50Ratio, 2)}×`,
      fixed(r.sdkClientMillis, 3),
      fixed(r.httpClientMillis, 3),
    ]),
  );
}

export function writeJson(file: string, value: unknown): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

const START = '<!-- bench:results:start (written by `npm run bench`; edit outside these markers) -->';
const END = '<!-- bench:results:end -->';

/** Replaces the generated section of a markdown file, keeping the hand-written text around it. */
export function writeMarkdownSection(file: string, title: string, generated: string): void {
  const section = `${START}\n${generated.trim()}\n${END}`;
  let text = existsSync(file) ? readFileSync(file, 'utf8') : `# ${title}\n\n${START}\n${END}\n`;
  const from = text.indexOf(START);
  const to = text.indexOf(END);
  text = from >= 0 && to > from ? text.slice(0, from) + section + text.slice(to + END.length) : `${text.trimEnd()}\n\n${section}\n`;
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}
