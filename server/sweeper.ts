/** The sweeper: ends lapsed sessions and locks every interval, in the background. */
import type { EventLog } from '../exporter/events.js';
import type { LockService } from '../lock/core/lock-service.js';

/**
 * Single flight: a tick that finds the last sweep still running is skipped, so a slow
 * store never builds a queue of sweeps (each would only find the same rows again).
 * Stopping ends the running sweep after its batch in hand: shutdown never waits for a storm.
 */
export function startSweeper(service: Pick<LockService, 'sweep'>, events: EventLog, intervalMillis: number) {
  let running: Promise<unknown> | null = null;
  const stopping = new AbortController();
  let sweeps = 0;
  const timer = setInterval(() => {
    if (running) return;
    const requestId = `sweep-${++sweeps}`;
    running = service
      .sweep({ requestId }, { stop: stopping.signal })
      .catch((error: Error) => {
        events.emit('sweep_failed', { requestId }, { message: error.message });
      })
      .finally(() => {
        running = null;
      });
  }, intervalMillis);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      stopping.abort();
      await running;
    },
    /** Sweeps started so far (tests). */
    started: () => sweeps,
  };
}
