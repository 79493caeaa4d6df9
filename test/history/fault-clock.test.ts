/**
 * The clock fault seam (server/fault-clock.ts) the nemesis' clock-offset uses: without its env var
 * nothing changes; with it, the clock runs the file's offset ahead, and follows the file as it changes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, test, vi } from 'vitest';
import { FAULT_CLOCK_OFFSET_FILE_ENV, faultClockFromEnv } from '../../server/fault-clock.js';

const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-fault-clock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('unset (as in production): no fault clock', () => {
  expect(faultClockFromEnv({})).toBeUndefined();
});

test('the clock runs the file\'s offset ahead, and follows the file when it changes', async () => {
  const file = path.join(dir, 'offset.ms');
  writeFileSync(file, '3600000\n');
  const fault = faultClockFromEnv({ [FAULT_CLOCK_OFFSET_FILE_ENV]: file })!;
  try {
    const ahead = fault.clock.now() - Date.now();
    expect(ahead).toBeGreaterThanOrEqual(3_600_000 - 5);
    expect(ahead).toBeLessThanOrEqual(3_600_000 + 5);
    writeFileSync(file, '-5000\n');
    await vi.waitFor(() => expect(fault.clock.now() - Date.now()).toBeLessThan(-4_990), { timeout: 10_000, interval: 20 });
    writeFileSync(file, 'not a number');
    await vi.waitFor(() => expect(Math.abs(fault.clock.now() - Date.now())).toBeLessThan(10), { timeout: 10_000, interval: 20 });
  } finally {
    fault.stop();
  }
});

test('a missing file is no offset', () => {
  const fault = faultClockFromEnv({ [FAULT_CLOCK_OFFSET_FILE_ENV]: path.join(dir, 'absent.ms') })!;
  expect(Math.abs(fault.clock.now() - Date.now())).toBeLessThan(10);
  fault.stop();
});
