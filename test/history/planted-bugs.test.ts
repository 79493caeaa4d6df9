/**
 * The checker catches broken builds: each planted bug (support/planted-bugs.ts, a store
 * wrapper in a test-only server entry, out of process) run with the same seed and workload
 * is reported with a counterexample; the real build on the same seed and settings is clean.
 * No faults are injected here: the bugs are found by the workload's own contention and
 * overrunning holders, so the finding is the bug's, not a fault's.
 */
import { describe, expect, test } from 'vitest';
import { renderFinding, type RuleName } from './checker.js';
import { runHistory, type RunOptions } from './run.js';
import { expectCleanRun, keepArtifacts } from './support/run-assertions.js';
import type { PlantedBug } from './support/planted-bugs.js';

const SETTINGS: RunOptions = {
  store: 'postgres',
  instances: 1,
  seed: 7,
  steps: 80,
  clients: 4,
  keys: 2,
  lockTtlMillis: 1_000,
  faults: [],
  env: { HOLDFAST_PLANTED_SKEW_MS: '600' },
};

/** What each bug must show up as (any of these rules). */
const EXPECTED: Record<PlantedBug, RuleName[]> = {
  'release-ignores-token': ['superseded-release', 'mutex-overlap', 'lost-grant', 'fence-refused-live-holder'],
  'server-clock-expiry': ['mutex-overlap', 'lost-grant', 'fence-refused-live-holder'],
  'double-grant': ['mutex-overlap', 'lost-grant', 'fence-refused-live-holder'],
  'per-key-tokens': ['token-order'],
};

describe.each(Object.keys(EXPECTED) as PlantedBug[])('planted bug %s', (bug) => {
  test('is reported, with a counterexample', async () => {
    const result = await runHistory({ ...SETTINGS, plantedBug: bug });
    keepArtifacts(`ci-planted-${bug}`, result);
    const found = new Set(result.report.violations.map((v) => v.rule));
    const first = result.report.violations.find((v) => EXPECTED[bug].includes(v.rule));
    if (first) console.log(`${bug}: first counterexample\n${renderFinding(first, result.history.ops)}`);
    expect(result.report.verdict).toBe('invalid');
    expect([...found].filter((rule) => EXPECTED[bug].includes(rule))).not.toEqual([]);
    expect(first!.ops.length).toBeGreaterThanOrEqual(2);
  }, 300_000);
});

test('the real build passes the same seed and settings', async () => {
  const result = await runHistory(SETTINGS);
  keepArtifacts('ci-planted-control', result);
  expectCleanRun(result, expect, { grants: 20, faults: 0 });
}, 300_000);
