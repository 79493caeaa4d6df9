/** Turns a cell's raw measure into the figures the tables show (pure: no clock, no I/O). */
import { summarise } from '../stats.js';
import type { CellMeasure } from './cell.js';
import { lastReleaserShare, winSpread } from './fairness.js';
import type { CellMode, SystemId } from './system.js';

export interface PeerCell {
  system: SystemId;
  label: string;
  mode: CellMode;
  workers: number;
  /** Hot cells: how many keys the workers share. */
  hotKeys?: number;
  cycles: number;
  cyclesPerSecond: number;
  p50Millis: number;
  p99Millis: number;
  failures: Record<string, number>;
  failuresOutsideWindow: Record<string, number>;
  /** This process's CPU (the clients) ÷ cycles. */
  clientCpuMillisPerCycle: number;
  /** Every server-side process's CPU ÷ cycles, and its split by role. */
  serverCpuMillisPerCycle: number;
  serverCpuSplit: Record<string, number>;
  /** Hot cells only. */
  lastReleaserShare?: number;
  winsPerWorker?: { min: number; max: number };
  loadAverage1m: number;
}

export function cellFigures(
  identity: { system: SystemId; label: string; mode: CellMode; workers: number; hotKeys?: number },
  measure: CellMeasure,
  loadAverage1m: number,
): PeerCell {
  const summary = summarise(measure.latenciesMillis, measure.windowMillis / 1000);
  const perCycle = (ms: number) => (summary.cycles === 0 ? Number.NaN : ms / summary.cycles);
  const serverCpuSplit = Object.fromEntries(Object.entries(measure.serverCpuMillis).map(([role, ms]) => [role, perCycle(ms)]));
  const cell: PeerCell = {
    ...identity,
    cycles: summary.cycles,
    cyclesPerSecond: summary.cyclesPerSecond,
    p50Millis: summary.p50Millis,
    p99Millis: summary.p99Millis,
    failures: measure.failures,
    failuresOutsideWindow: measure.failuresOutsideWindow,
    clientCpuMillisPerCycle: perCycle(measure.clientCpuMillis),
    serverCpuMillisPerCycle: perCycle(Object.values(measure.serverCpuMillis).reduce((a, b) => a + b, 0)),
    serverCpuSplit,
    loadAverage1m,
  };
  if (identity.mode === 'hot') {
    cell.lastReleaserShare = lastReleaserShare(measure.grants).share;
    cell.winsPerWorker = winSpread(measure.grants, identity.workers);
  }
  return cell;
}
