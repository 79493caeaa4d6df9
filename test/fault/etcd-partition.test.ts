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

const FAULT_MILLIS = 6000;
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

function checkWorkload(workload: Workload, faultAt: number, label: string, extra: string) {
  const after = workload.grants.filter((g) => g.grantedAt > faultAt).length;
  const firstAfter = workload.firstGrantAfter(faultAt);
  console.log(`${label}: ${extra}; ${after} grants after the fault, first ${firstAfter === undefined ? 'NEVER' : `${firstAfter - faultAt} ms`} after it; ${workload.summary()}`);
  expect(workload.recorder.rejected).toEqual([]);
  expect(workload.overlaps()).toEqual([]);
  expect([...workload.requests.keys()].filter((k) => / 500$/.test(k))).toEqual([]);
  expect(after).toBeGreaterThan(5);
  expect(firstAfter! - faultAt).toBeLessThan(FAULT_MILLIS);
}

test('etcd leader SIGKILLed under load: service resumes on the new leader, 0 overlaps', async () => {
  const workload = workloadOn('etcd-kill');
  await eventually(async () => workload.grants.length >= 20, 60_000, 20);
  const leader = await cluster.waitForLeader();
  const killedAt = Date.now();
  await cluster.kill(leader.name);
  const next = await cluster.waitForLeader();
  const electedIn = Date.now() - killedAt;
  await new Promise((r) => setTimeout(r, FAULT_MILLIS));
  await workload.stop();
  checkWorkload(workload, killedAt, 'etcd leader killed', `leader ${leader.name} killed, ${next.name} leads after ${electedIn} ms`);
  await cluster.restart(leader.name);
  await cluster.waitForLeader();
}, 120_000);

test('etcd leader partitioned from the other members, then healed: 0 overlaps while cut, service resumes after the heal, it rejoins', async () => {
  const workload = workloadOn('etcd-partition');
  await eventually(async () => workload.grants.length >= 20, 60_000, 20);
  const leader = await cluster.waitForLeader();
  const cutAt = Date.now();
  await cluster.partition(leader.name);
  await new Promise((r) => setTimeout(r, FAULT_MILLIS));
  const during = workload.grants.filter((g) => g.grantedAt > cutAt).length;
  cluster.heal();
  const healedAt = Date.now();
  const rejoined = await cluster.waitForLeader(30_000);
  const agreedIn = Date.now() - healedAt;
  await new Promise((r) => setTimeout(r, 1000));
  await workload.stop();
  // Service is asserted from the heal on: during the cut both instances' etcd clients keep sending to the
  // cut-off member (a known limitation, reported with the figures), so grants through the majority are few.
  checkWorkload(
    workload,
    healedAt,
    'etcd leader partitioned',
    `${leader.name} cut off for ${healedAt - cutAt} ms (${during} grants meanwhile); after healing all three agree on ${rejoined.name} within ${agreedIn} ms`,
  );
}, 120_000);
