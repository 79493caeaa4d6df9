/**
 * Time (v2): the store's clock decides liveness. Two servers on one PostgreSQL,
 * one with its clock 20 s ahead (and, separately, 20 s behind), injected through
 * core's Clock seam: over 200 acquire/renew/heartbeat cycles through both, no
 * early grant (a live lock is never granted to another session), no early expiry
 * (heartbeated sessions and renewed locks stay live, the sessions outlive their TTL
 * on heartbeats sent through the skewed server), and the fenced resource never sees
 * a token go backwards.
 *
 * "Early" is judged against what the test can prove from its own monotonic clock
 * (test/support/ttl-witness.ts), never against how fast this machine happens to be:
 * see test/support/skew-cycles.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { systemClock, type Clock } from '../../lock/core/clock.js';
import { PATIENT_STORE_ENV } from '../support/patient-store.js';
import { startServer, type TestServer } from '../support/server.js';
import { expectSkewRunHeld, runSkewCycles, skewRunLine } from '../support/skew-cycles.js';

const CYCLES = 200;
const WORKERS = 4;
/**
 * Far above what a cycle or a heartbeat round needs (printed below as the smallest margin
 * left: a cycle takes tens of ms, a heartbeat round ~0.5 s, the slowest step of a quiet run
 * under 0.8 s), far below the 20 s skew: a server that judged liveness by its own clock
 * would see every grant of the other as long expired (ahead) or write expiries already
 * past (behind).
 */
const SESSION_TTL = 10_000;
const LOCK_TTL = 10_000;
const HEARTBEAT_EVERY = 500;

const skewed = (offsetMillis: number): Clock => ({ now: () => Date.now() + offsetMillis, sleep: systemClock.sleep });

describe.each([
  ['20 s ahead', 20_000],
  ['20 s behind', -20_000],
])('one server %s', (_label, offset) => {
  let normal: TestServer;
  let skewedServer: TestServer;
  beforeAll(async () => {
    normal = await startServer({ store: 'postgres', env: PATIENT_STORE_ENV });
    skewedServer = await startServer({ store: 'postgres', env: { ...PATIENT_STORE_ENV, DATABASE_URL: normal.databaseUrl! }, clock: skewed(offset) });
  });
  afterAll(async () => {
    await skewedServer?.stop();
    await normal?.stop();
  });

  test(`${CYCLES} acquire/renew/heartbeat cycles: no early grant, no early expiry`, async () => {
    const run = await runSkewCycles({
      normal,
      skewed: skewedServer,
      label: `skew/${offset}`,
      cycles: CYCLES,
      workers: WORKERS,
      sessionTtlMillis: SESSION_TTL,
      lockTtlMillis: LOCK_TTL,
      heartbeatEveryMillis: HEARTBEAT_EVERY,
      // Past the TTL plus a few sweeps: a session that heartbeats did not extend would be gone.
      runAtLeastMillis: SESSION_TTL + 1_500,
      // Sessions opened and heartbeated through the skewed server: its clock must not shorten them.
      holder: { openOn: 'skewed', beatOn: 'skewed' },
      rival: { openOn: 'skewed', beatOn: 'skewed' },
      steps: { renew: 'skewed', read: 'second', release: 'second', next: 'second', rivalRelease: 'first' },
      writeAfterRead: false,
      listOn: 'normal',
    });
    console.log(`clock ${offset > 0 ? '+' : ''}${offset} ms (benchmark, not asserted): ${skewRunLine(run, { cycles: CYCLES, lockTtlMillis: LOCK_TTL, sessionTtlMillis: SESSION_TTL })}`);
    expectSkewRunHeld(run, { cycles: CYCLES, workers: WORKERS, writesPerCycle: 2 }, expect);
  }, 180_000);
});
