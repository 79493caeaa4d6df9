/**
 * Fault (e): a three-member etcd cluster on loopback, every peer link through
 * a proxy (test/support/etcd-peer-proxy.ts), two Holdfast instances on it and
 * the SDK workload (both endpoints) with the fenced-resource oracle.
 *   1. the etcd leader SIGKILLed: service resumes on the new leader;
 *   2. the etcd leader partitioned from the other two (its peer links cut both
 *      ways, connections left open), then healed: no unsafe grant while cut, the
 *      cluster agrees on one leader again, service resumes within seconds. The
 *      grants made during the cut are printed, not asserted: Holdfast's etcd
 *      client keeps sending to the cut-off member, so few get through (issue 11
 *      follow-up: move off a member that answers no leader).
 * Both: 0 fenced writes refused, 0 overlapping grants, no 500.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startWorkload, type Workload } from '../support/fault-workload.js';
import { eventually } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';

/** How long the partition lasts (the scenario, not a bound). */
const FAULT_MILLIS = 6000;
/**
 * Service resumes: grants after the fault (the election, or the heal) are waited for as an outcome, not counted in a
 * fixed window. The first one came 1.5–2.2 s after a leader kill or a heal on a quiet run, and 13.4 s after a heal
 * at load average 7.5 (a key whose grant the cut stranded waits out its 10 s lock TTL). The deadline is ≥ 10× that
 * and only bounds a failing run; the figures are printed.
 */
const RESUME_GRANTS = 6;
const RESUME_WITHIN_MILLIS = 150_000;
let cluster: EtcdCluster;
const servers: TestServer[] = [];

beforeAll(async () => {
  cluster = await startEtcdCluster(3, { peerProxies: true });
  await cluster.waitForLeader();
  for (let i = 0; i < 2; i += 1) servers.push(await startServer({ store: 'etcd', env: { ETCD_ENDPOINTS: cluster.endpoints.join(',') } }));
}, 120_000);
afterAll(async () => {
  cluster?.heal();
  for (const server of servers) await server.stop();
  await cluster?.stop();
});

function workloadOn(prefix: string): Workload {
  return startWorkload({
    urls: servers.map((s) => s.url),
    workers: 4,
    keys: 2,
    keyPrefix: prefix,
    sessionTtlMillis: 15_000,
    lockTtlMillis: 10_000,
    workMillis: 10,
  });
}

/** Load runs on until service resumed after `faultAt` and at least until `runUntil` (so the oracle sees load after the fault). */
async function checkWorkload(workload: Workload, faultAt: number, runUntil: number, label: string, extra: () => string) {
  const resumed = await workload.resumed(faultAt, RESUME_GRANTS, RESUME_WITHIN_MILLIS);
  await new Promise((r) => setTimeout(r, Math.max(0, runUntil - Date.now())));
  await workload.stop();
  const after = workload.grantsAfter(faultAt);
  const firstAfter = workload.firstGrantAfter(faultAt);
  console.log(
    `${label}: ${extra()}; ${after} grants after the fault (waited for ${RESUME_GRANTS}, at most ${RESUME_WITHIN_MILLIS} ms), ` +
      `first ${firstAfter === undefined ? 'NEVER' : `${Math.round(firstAfter - faultAt)} ms`} after it; ${workload.summary()}`,
  );
  expect(workload.recorder.rejected).toEqual([]);
  expect(workload.overlaps()).toEqual([]);
  expect([...workload.requests.keys()].filter((k) => / 500$/.test(k))).toEqual([]);
  expect(resumed).toBe(true);
}

test('etcd leader SIGKILLed under load: service resumes on the new leader, 0 overlaps', async () => {
  const workload = workloadOn('etcd-kill');
  await eventually(async () => workload.grants.length >= 20, 60_000, 20);
  const leader = await cluster.waitForLeader();
  const killedAt = Date.now();
  await cluster.kill(leader.name);
  const next = await cluster.waitForLeader();
  const electedIn = Date.now() - killedAt;
  await checkWorkload(workload, killedAt, Date.now() + FAULT_MILLIS, 'etcd leader killed', () => `leader ${leader.name} killed, ${next.name} leads after ${electedIn} ms`);
  await cluster.restart(leader.name);
  await cluster.waitForLeader();
}, 400_000);

test('etcd leader partitioned from the other members, then healed: 0 overlaps while cut, service resumes after the heal, it rejoins', async () => {
  const workload = workloadOn('etcd-partition');
  await eventually(async () => workload.grants.length >= 20, 60_000, 20);
  const leader = await cluster.waitForLeader();
  const cutAt = Date.now();
  await cluster.partition(leader.name);
  await new Promise((r) => setTimeout(r, FAULT_MILLIS));
  const during = workload.grantsAfter(cutAt);
  cluster.heal();
  const healedAt = Date.now();
  const rejoined = await cluster.waitForLeader();
  const agreedIn = Date.now() - healedAt;
  // Service is asserted from the heal on: during the cut both instances' etcd clients keep sending to the
  // cut-off member (a known limitation, reported with the figures), so grants through the majority are few.
  await checkWorkload(
    workload,
    healedAt,
    Date.now() + 1000,
    'etcd leader partitioned',
    () => `${leader.name} cut off for ${healedAt - cutAt} ms (${during} grants meanwhile); after healing all three agree on ${rejoined.name} within ${agreedIn} ms`,
  );
}, 400_000);
