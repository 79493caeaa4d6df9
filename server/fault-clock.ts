/**
 * A fault-injection seam, for history runs only (docs/history.md): when
 * HOLDFAST_FAULT_CLOCK_OFFSET_FILE names a file, this server's clock (the
 * core's Clock seam: wait deadlines, contention budgets, insight instants)
 * runs that file's signed number of milliseconds ahead of the system clock,
 * re-read every poll, so a test can move one process's clock
 * while it serves. Liveness is the store's clock (SPEC), so a correct server
 * stays safe whatever the offset: the nemesis moves it to show that. Unset,
 * as in production, the server uses the system clock untouched. Sleeps are
 * durations and are not offset.
 */
import { readFileSync } from 'node:fs';
import { systemClock, type Clock } from '../lock/core/clock.js';

export const FAULT_CLOCK_OFFSET_FILE_ENV = 'HOLDFAST_FAULT_CLOCK_OFFSET_FILE';

/**
 * How often the file is read: a fault lasts 0.3 s or more. Read, not stat-watched: fs.watchFile
 * takes its baseline stat asynchronously, so a change made before that stat lands (a busy thread
 * pool) is the baseline and never reported.
 */
const POLL_MILLIS = 50;

export interface FaultClock {
  clock: Clock;
  stop(): void;
}

export function faultClockFromEnv(env: Record<string, string | undefined>): FaultClock | undefined {
  const file = env[FAULT_CLOCK_OFFSET_FILE_ENV];
  if (!file) return undefined;
  let offset = 0;
  const read = () => {
    try {
      const value = Number(readFileSync(file, 'utf8').trim());
      offset = Number.isFinite(value) ? value : 0;
    } catch {
      offset = 0; // no file yet, or removed: no offset
    }
  };
  read();
  const poll = setInterval(read, POLL_MILLIS);
  poll.unref();
  return {
    clock: { now: () => systemClock.now() + offset, sleep: systemClock.sleep },
    stop: () => clearInterval(poll),
  };
}
