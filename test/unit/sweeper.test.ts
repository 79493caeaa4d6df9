import { afterEach, expect, test, vi } from 'vitest';
import { startSweeper } from '../../server/sweeper.js';
import type { EventLog } from '../../exporter/events.js';

afterEach(() => {
  vi.useRealTimers();
});

test('the sweeper is single-flight: no new sweep starts while the last one runs', async () => {
  vi.useFakeTimers();
  let inFlight = 0;
  let maxInFlight = 0;
  const finishers: (() => void)[] = [];
  const service = {
    sweep: () =>
      new Promise<{ sessions: number; locks: number }>((resolve) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        finishers.push(() => {
          inFlight--;
          resolve({ sessions: 0, locks: 0 });
        });
      }),
  };
  const events = { emit: () => {} } as unknown as EventLog;
  const sweeper = startSweeper(service, events, 20);
  await vi.advanceTimersByTimeAsync(1000); // 50 ticks while the first sweep hangs
  expect(sweeper.started()).toBe(1);
  finishers.shift()!();
  await vi.advanceTimersByTimeAsync(20);
  expect(sweeper.started()).toBe(2);
  expect(maxInFlight).toBe(1);
  finishers.shift()!();
  await sweeper.stop();
});
