/**
 * The clock fault seam (server/fault-clock.ts) the nemesis' clock-offset uses: without its env var
 * nothing changes; with it, the clock runs the file's offset ahead, and follows the file as it changes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, test, vi } from 'vitest';
import { FAULT_CLOCK_OFFSET_FILE_ENV, faultClockFromEnv, type FaultClock } from '../../server/fault-clock.js';

const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-fault-clock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The offset the fault clock runs at, bracketed by two system readings (no scheduling race). */
function offsetOf(fault: FaultClock): [number, number] {
  const before = Date.now();
  const reading = fault.clock.now();
  const after = Date.now();
  return [reading - after, reading - before];
}

const runsAt = (fault: FaultClock, offset: number) => {
  const [lo, hi] = offsetOf(fault);
  return lo <= offset && offset <= hi;
};

test('unset (as in production): no fault clock', () => {
  expect(faultClockFromEnv({})).toBeUndefined();
});

test("the clock runs the file's offset ahead, and follows the file when it changes", async () => {
  const file = path.join(dir, 'offset.ms');
  writeFileSync(file, '3600000\n');
  const fault = faultClockFromEnv({ [FAULT_CLOCK_OFFSET_FILE_ENV]: file })!;
  try {
    expect(runsAt(fault, 3_600_000)).toBe(true);
    writeFileSync(file, '-5000\n');
    await vi.waitFor(() => expect(runsAt(fault, -5_000)).toBe(true), { timeout: 30_000, interval: 20 });
    writeFileSync(file, 'not a number');
    await vi.waitFor(() => expect(runsAt(fault, 0)).toBe(true), { timeout: 30_000, interval: 20 });
  } finally {
    fault.stop();
  }
});

test('a missing file is no offset', () => {
  const fault = faultClockFromEnv({ [FAULT_CLOCK_OFFSET_FILE_ENV]: path.join(dir, 'absent.ms') })!;
  expect(runsAt(fault, 0)).toBe(true);
  fault.stop();
});
