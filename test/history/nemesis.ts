/**
 * The nemesis: faults one at a time, chosen and timed from a seed, each
 * recorded in the history as a `fault` operation of process `nemesis` (invoke
 * when it starts, complete when it is healed). Faults start by the workload's
 * progress (every 15–45 steps), not by the clock, so a slow machine sees as
 * many faults per operation as a fast one; each lasts 0.3–3 s of real time
 * (a fault that stops progress could not be ended by a step count). Kinds come from a
 * seeded shuffled bag: each kind once, in a seeded order, before any repeats.
 */
import { seededRandom } from '../../client/random.js';
import type { HistoryRecorder } from './recorder.js';
import type { FaultAction } from './support/cluster.js';

export interface NemesisOptions {
  recorder: HistoryRecorder;
  seed: number;
  actions: Record<string, FaultAction>;
  /** The workload's steps taken, and whether it still runs. */
  progress: () => { steps: number; running: boolean };
  /** Steps before the first fault and between faults: [min, max]. */
  gapSteps?: [number, number];
  durationMillis?: [number, number];
}

export interface NemesisRun {
  /** Faults injected, by kind. */
  readonly counts: Record<string, number>;
  /** Faults that could not be started or healed, with why (the run goes on). */
  readonly errors: string[];
  done: Promise<void>;
}

export function startNemesis(options: NemesisOptions): NemesisRun {
  const random = seededRandom(options.seed ^ 0x5eed);
  const pick = (n: number) => Math.floor(random() * n);
  const [gapMin, gapMax] = options.gapSteps ?? [15, 45];
  const [durMin, durMax] = options.durationMillis ?? [300, 3_000];
  const kinds = Object.keys(options.actions).sort();
  const counts: Record<string, number> = Object.fromEntries(kinds.map((k) => [k, 0]));
  const errors: string[] = [];
  const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis));

  const bag: string[] = [];
  const run = async () => {
    let next = gapMin + pick(gapMax - gapMin);
    while (kinds.length > 0) {
      const { steps, running } = options.progress();
      if (!running) return;
      if (steps < next) {
        await sleep(20);
        continue;
      }
      // A shuffled bag: every kind once before any repeats, so even a short run meets each of them.
      if (bag.length === 0) bag.push(...shuffled(kinds, pick));
      const kind = bag.pop()!;
      const millis = durMin + pick(durMax - durMin);
      const finish = options.recorder.invoke({ process: 'nemesis', f: 'fault', args: { kind, millis } });
      try {
        const fault = await options.actions[kind]!(pick, millis);
        counts[kind] = (counts[kind] ?? 0) + 1;
        // The fault lasts its time, or until the workload ends (then it is healed at once).
        const until = Date.now() + millis;
        while (Date.now() < until && options.progress().running) await sleep(Math.min(50, until - Date.now()));
        await fault.heal();
        finish({ outcome: 'ok', result: { target: fault.target } });
      } catch (error) {
        errors.push(`${kind}: ${(error as Error).message.slice(0, 200)}`);
        finish({ outcome: 'fail', error: { message: (error as Error).message.slice(0, 200) } });
      }
      next = options.progress().steps + gapMin + pick(gapMax - gapMin);
    }
  };
  return { counts, errors, done: run() };
}

function shuffled<T>(items: readonly T[], pick: (n: number) => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i -= 1) {
    const j = pick(i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
