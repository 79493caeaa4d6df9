/**
 * A short seeded history run on the postgres store: SDK clients on a few keys with a fenced
 * resource, 2 server instance(s) out of process, the nemesis injecting every fault this
 * store supports; the checker must find no violation. Bounded by steps, and by a wall budget
 * (start-up included) so the test ends within a minute on a loaded machine.
 */
import { expect, test } from 'vitest';
import { CI_WALL_BUDGET_MILLIS, runHistory } from './run.js';
import { expectCleanRun, keepArtifacts } from './support/run-assertions.js';

test('postgres: a seeded run under faults has a history with no violation', async () => {
  const result = await runHistory({ store: 'postgres', instances: 2, ownPostgres: true, seed: 1, steps: 80, clients: 4, keys: 2, lockTtlMillis: 1_000, gapSteps: [5, 14], wallBudgetMillis: CI_WALL_BUDGET_MILLIS });
  keepArtifacts('ci-postgres-seed1', result);
  expectCleanRun(result, expect, { grants: 5, faults: 1 });
}, 300_000);
