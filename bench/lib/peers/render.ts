/** Markdown tables of the peers bench (printed and written to bench/results/peers.md). Pure. */
import { table } from '../report.js';
import type { PeerCell } from './figures.js';
import { GUARANTEE_COLUMNS, type GuaranteeRow } from './guarantees.js';
import type { SystemId } from './system.js';

const fixed = (value: number | undefined, digits: number) => (value === undefined || Number.isNaN(value) ? '—' : value.toFixed(digits));

const percent = (share: number | undefined) => (share === undefined || Number.isNaN(share) ? '—' : `${(share * 100).toFixed(1)} %`);

function failureText(failures: Record<string, number>): string {
  const entries = Object.entries(failures);
  return entries.length === 0 ? '0' : entries.map(([what, n]) => `${n}× ${what}`).join('; ');
}

/** e.g. `holdfast server 0.412 + postgres 0.201`: whose CPU the server-side figure adds up. */
function splitText(split: Record<string, number>): string {
  return Object.entries(split)
    .map(([role, ms]) => `${role} ${fixed(ms, 3)}`)
    .join(' + ');
}

export function uncontendedTable(cells: readonly PeerCell[]): string {
  return table(
    ['c', 'system', 'cycles/s', 'p50 ms', 'p99 ms', 'failed', 'client CPU ms/cycle', 'server CPU ms/cycle', 'server CPU by process', 'load 1m'],
    cells.map((c) => [
      String(c.workers),
      c.label,
      fixed(c.cyclesPerSecond, 0),
      fixed(c.p50Millis, 2),
      fixed(c.p99Millis, 2),
      failureText(c.failures),
      fixed(c.clientCpuMillisPerCycle, 3),
      fixed(c.serverCpuMillisPerCycle, 3),
      splitText(c.serverCpuSplit),
      fixed(c.loadAverage1m, 2),
    ]),
  );
}

export function contendedTable(cells: readonly PeerCell[]): string {
  return table(
    [
      'system',
      'cycles/s',
      'p50 ms',
      'p99 ms',
      'failed',
      'won by last releaser',
      'wins per worker min–max',
      'client CPU ms/cycle',
      'server CPU ms/cycle',
      'server CPU by process',
      'load 1m',
    ],
    cells.map((c) => [
      c.label,
      fixed(c.cyclesPerSecond, 0),
      fixed(c.p50Millis, 2),
      fixed(c.p99Millis, 2),
      failureText(c.failures),
      percent(c.lastReleaserShare),
      c.winsPerWorker ? `${c.winsPerWorker.min}–${c.winsPerWorker.max}` : '—',
      fixed(c.clientCpuMillisPerCycle, 3),
      fixed(c.serverCpuMillisPerCycle, 3),
      splitText(c.serverCpuSplit),
      fixed(c.loadAverage1m, 2),
    ]),
  );
}

/** `detailed`: each answer with its reason (peers.md); otherwise the short answers (README, console). */
export function guaranteesTable(rows: readonly GuaranteeRow[], detailed = false): string {
  return table(
    ['system', ...GUARANTEE_COLUMNS],
    rows.map((row) => [
      row.label,
      ...GUARANTEE_COLUMNS.map((column) => {
        const claim = row.claims[column];
        return detailed ? `${claim.short}: ${claim.why}` : claim.short;
      }),
    ]),
  );
}

const HOLDFAST_STORES: readonly SystemId[] = ['holdfast-embedded', 'holdfast-postgres', 'holdfast-etcd'];

/**
 * Holdfast through its SDK against the recipe it replaces (etcd3 `client.lock()`), per
 * concurrency: cycles/s ratio, and at c=1 the median's ratio (issue 22's acceptance wants ≥ 2×
 * at c=64 and a c=1 median no slower).
 */
export function recipeComparison(cells: readonly PeerCell[]): string[] {
  const lines: string[] = [];
  const own = cells.filter((c) => c.mode === 'own');
  for (const workers of [...new Set(own.map((c) => c.workers))]) {
    const recipe = own.find((c) => c.system === 'etcd3-lock' && c.workers === workers);
    if (!recipe) continue;
    const parts = HOLDFAST_STORES.flatMap((system) => {
      const ours = own.find((c) => c.system === system && c.workers === workers);
      if (!ours) return [];
      const throughput = `${fixed(ours.cyclesPerSecond / recipe.cyclesPerSecond, 2)}× the cycles/s`;
      const median = workers === 1 ? `, p50 ${fixed(ours.p50Millis / recipe.p50Millis, 2)}× its p50` : '';
      return [`${ours.label} ${throughput}${median}`];
    });
    if (parts.length > 0) lines.push(`c=${workers}, against ${recipe.label}: ${parts.join('; ')}.`);
  }
  return lines;
}
