/**
 * One seeded history run: start the cluster, run the workload with the nemesis
 * beside it, take the history, check it, stop everything. Used by the per-store
 * tests (short runs) and bench/torture.ts (long ones); the caller decides what
 * to assert or where to write the report.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { check, renderReport, type CheckReport } from './checker.js';
import { toJsonLines, type History } from './format.js';
import { startNemesis } from './nemesis.js';
import { HistoryRecorder } from './recorder.js';
import { renderTimeline } from './timeline.js';
import { startCluster, type ClusterOptions } from './support/cluster.js';
import { startWorkload } from './workload.js';

/** How long after its invoke an unanswered request of these runs can still take effect, at most (see check()). */
export const UNKNOWN_EFFECT_WITHIN_MILLIS = 30_000;

/** What `npm test`'s short run per store may take, start-up included (issue 27: ≤ 60 s each, with the test file's own load). */
export const CI_WALL_BUDGET_MILLIS = 42_000;

/** Kept back from a wall budget after the workload's deadline: its last steps (≤ 3 s budgets), heals, stop, check. */
const WIND_DOWN_MILLIS = 8_000;
/** Never less workload than this, however slow the start: a run too short proves nothing. */
const MIN_WORKLOAD_MILLIS = 10_000;

export interface RunOptions extends ClusterOptions {
  seed: number;
  steps: number;
  clients?: number;
  keys?: number;
  /** Fault kinds to use (default: every kind the cluster supports, and client pauses); [] for none. */
  faults?: string[];
  /** Bounds a run that cannot progress; the step count is what ends a healthy one. */
  deadlineMillis?: number;
  /**
   * The whole run's wall time, start-up included (CI: a test must end within its budget on a loaded
   * machine). The workload gets what the start-up left, less WIND_DOWN_MILLIS for the last holds,
   * the heal, the shutdown and the check; it ends at its step count or then, whichever comes first.
   */
  wallBudgetMillis?: number;
  sessionTtlMillis?: number;
  lockTtlMillis?: number;
  /** Steps between faults: [min, max] (default [15, 45]). */
  gapSteps?: [number, number];
}

export interface RunResult {
  history: History;
  report: CheckReport;
  faults: Record<string, number>;
  nemesisErrors: string[];
  workloadErrors: Record<string, number>;
  fenced: { accepted: number; refused: number };
  /** Time the workload and nemesis ran, and the whole run with start-up and shutdown (ms). */
  workloadMillis: number;
  totalMillis: number;
  /** One paragraph for logs. */
  summary: string;
}

export async function runHistory(options: RunOptions): Promise<RunResult> {
  const startedAt = performance.now();
  const cluster = await startCluster(options);
  const startMillis = performance.now() - startedAt;
  const recorder = new HistoryRecorder();
  let workloadMillis = 0;
  try {
    const workStart = performance.now();
    const workload = startWorkload({
      recorder,
      urls: cluster.instances.map((i) => i.url),
      operatorToken: cluster.operatorToken,
      clients: options.clients ?? 4,
      keys: options.keys ?? 2,
      keyPrefix: 'h',
      steps: options.steps,
      deadlineMillis: Math.min(
        options.deadlineMillis ?? 600_000,
        options.wallBudgetMillis === undefined ? Infinity : Math.max(MIN_WORKLOAD_MILLIS, options.wallBudgetMillis - startMillis - WIND_DOWN_MILLIS),
      ),
      // A wall-budgeted run still takes the steps to its first fault (gapSteps' max, plus a few after it),
      // however slow the start was (at load 14 a 49 s start left 8 steps and no fault).
      ...(options.wallBudgetMillis !== undefined ? { minSteps: Math.min(options.steps, (options.gapSteps?.[1] ?? 45) + 5) } : {}),
      seed: options.seed,
      sessionTtlMillis: options.sessionTtlMillis ?? 4_000,
      lockTtlMillis: options.lockTtlMillis ?? 2_000,
    });
    const all = { ...cluster.faults(), 'client-pause': async (pick: (n: number) => number) => workload.pauseClient(pick) };
    const wanted = options.faults ?? Object.keys(all);
    const actions = Object.fromEntries(Object.entries(all).filter(([kind]) => wanted.includes(kind)));
    const nemesis = startNemesis({
      recorder,
      seed: options.seed,
      actions,
      ...(options.gapSteps ? { gapSteps: options.gapSteps } : {}),
      progress: () => ({ steps: workload.progress, running: workload.running }),
    });
    await workload.done;
    await nemesis.done;
    workloadMillis = performance.now() - workStart;
    const history = recorder.history({
      store: options.store,
      seed: options.seed,
      instances: cluster.instances.length,
      ...(options.plantedBug ? { plantedBug: options.plantedBug } : {}),
      meta: { steps: options.steps, stepsTaken: workload.progress, clients: options.clients ?? 4, keys: options.keys ?? 2, faults: wanted.join(',') },
    });
    // This harness bounds how long a request can survive (proxies drop or delay ≤ 400 ms, faults last
    // ≤ 3 s, store calls time out within seconds, clients give up within 3 s): 30 s is far above that.
    const report = check(history, { unknownEffectWithinMillis: UNKNOWN_EFFECT_WITHIN_MILLIS });
    const fenced = { accepted: workload.resource.accepted, refused: workload.resource.rejected.length };
    const result: Omit<RunResult, 'summary' | 'totalMillis'> = {
      history,
      report,
      faults: nemesis.counts,
      nemesisErrors: nemesis.errors,
      workloadErrors: Object.fromEntries(workload.errors),
      fenced,
      workloadMillis,
    };
    await cluster.stop();
    const totalMillis = performance.now() - startedAt;
    const summary =
      `${options.store}${options.plantedBug ? ` [planted: ${options.plantedBug}]` : ''} seed ${options.seed}: ${report.verdict}, ` +
      `${report.violations.length} violations, ${report.indeterminate.length} indeterminate; ${report.stats.ops} ops (${report.stats.unknown} unknown), ` +
      `${report.stats.grants} grants; faults ${JSON.stringify(nemesis.counts)}${nemesis.errors.length ? ` (${nemesis.errors.length} failed to start/heal)` : ''}; ` +
      `${workload.progress} steps; fenced writes accepted ${fenced.accepted}, refused ${fenced.refused}; start ${(startMillis / 1000).toFixed(1)} s, workload ${(workloadMillis / 1000).toFixed(1)} s, total ${(totalMillis / 1000).toFixed(1)} s`;
    return { ...result, totalMillis, summary };
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

/** Writes `<name>.history.jsonl`, `<name>.report.txt` and `<name>.html` into `dir`; returns their paths. */
export function writeArtifacts(dir: string, name: string, result: RunResult): string[] {
  mkdirSync(dir, { recursive: true });
  const files = [path.join(dir, `${name}.history.jsonl`), path.join(dir, `${name}.report.txt`), path.join(dir, `${name}.html`)];
  writeFileSync(files[0]!, toJsonLines(result.history));
  writeFileSync(
    files[1]!,
    `${result.summary}\n\nfaults ${JSON.stringify(result.faults)}\nnemesis errors ${JSON.stringify(result.nemesisErrors)}\n` +
      `workload errors ${JSON.stringify(result.workloadErrors, null, 1)}\n\n${renderReport(result.report, result.history.ops, 10)}\n`,
  );
  writeFileSync(files[2]!, renderTimeline(result.history, result.report, { unknownEffectWithinMillis: UNKNOWN_EFFECT_WITHIN_MILLIS }));
  return files;
}
