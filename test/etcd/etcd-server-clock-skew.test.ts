/**
 * Time (v2) on etcd, through whole servers: two servers on one etcd, one with
 * its clock 20 s ahead (and, separately, 20 s behind), injected through core's
 * Clock seam. Over 200 acquire/renew/heartbeat cycles through both: no early
 * grant (a live lock is never granted to another session), no early expiry
 * (heartbeated sessions and renewed locks stay live, the sessions outlive their TTL
 * on heartbeats, no sweeper ends a session), and the fenced resource never sees a
 * token go backwards. The store-level twin (etcd-clock-skew.test.ts) skews the
 * store's own advisory clock instead.
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
 * under 0.8 s), far below the 20 s skew: a server that judged liveness by its own clock would see
 * every grant of the other as long expired (ahead) or write expiries already past (behind).
 * etcd keeps a lease less than 1.25 s past its TTL (whole seconds, pooled grant leases).
 */
const SESSION_TTL = 10_000;
const LOCK_TTL = 10_000;
const HEARTBEAT_EVERY = 500;

const skewed = (offsetMillis: number): Clock => ({ now: () => Date.now() + offsetMillis, sleep: systemClock.sleep });

describe.each([
  ['20 s ahead', 20_000],
  ['20 s behind', -20_000],
])('etcd: one server %s', (_label, offset) => {
  let normal: TestServer;
  let skewedServer: TestServer;
  beforeAll(async () => {
    normal = await startServer({ store: 'etcd', env: PATIENT_STORE_ENV });
    skewedServer = await startServer({ store: 'etcd', env: { ...PATIENT_STORE_ENV, ETCD_ENDPOINTS: normal.etcdEndpoints!.join(',') }, clock: skewed(offset) });
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
      // Past the TTL plus etcd's rounding and a sweep: a session heartbeats did not extend would be gone.
      runAtLeastMillis: SESSION_TTL + 1_500,
      // Each session heartbeated through the server that did not open it.
      holder: { openOn: 'skewed', beatOn: 'normal' },
      rival: { openOn: 'normal', beatOn: 'skewed' },
      steps: { renew: 'second', read: 'first', release: 'second', next: 'first', rivalRelease: 'second' },
      writeAfterRead: true,
      listOn: 'skewed',
    });
    console.log(`etcd, clock ${offset > 0 ? '+' : ''}${offset} ms (benchmark, not asserted): ${skewRunLine(run, { cycles: CYCLES, lockTtlMillis: LOCK_TTL, sessionTtlMillis: SESSION_TTL })}`);
    expectSkewRunHeld(run, { cycles: CYCLES, workers: WORKERS, writesPerCycle: 3 }, expect);
  }, 180_000);
});
