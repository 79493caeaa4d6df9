/**
 * What every seeded run test asserts and prints: the run made progress under
 * its faults, and (for the real build) the checker found nothing. The history,
 * report and picture are written to a temp folder and named in the output, so
 * a failure in CI leaves its counterexample behind.
 */
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { expect as Expect } from 'vitest';
import { renderReport } from '../checker.js';
import { writeArtifacts, type RunResult } from '../run.js';

export function keepArtifacts(name: string, result: RunResult): string {
  const dir = path.join(tmpdir(), 'holdfast-history');
  const files = writeArtifacts(dir, name, result);
  console.log(`${result.summary}\n  history, report and timeline: ${files.join(' ')}`);
  return files[2]!;
}

export function expectCleanRun(result: RunResult, expect: typeof Expect, minimum: { grants: number; faults: number }): void {
  const faults = Object.values(result.faults).reduce((a, b) => a + b, 0);
  expect(result.nemesisErrors).toEqual([]);
  expect(faults).toBeGreaterThanOrEqual(minimum.faults);
  expect(result.report.stats.grants).toBeGreaterThanOrEqual(minimum.grants);
  // The full counterexample is the failure message.
  expect(result.report.violations.length, renderReport(result.report, result.history.ops)).toBe(0);
}
