/**
 * Session heartbeats on etcd share one LeaseKeepAlive stream of the store's client
 * (not a stream per heartbeat), and each caller still gets its own answer.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { EtcdStore } from '../../lock/store/etcd/etcd-store.js';
import { startEtcd, type EtcdNode } from '../support/etcd.js';
import { hashOf, openSession, openStore } from './helpers.js';

let etcd: EtcdNode;
let store: EtcdStore;
beforeAll(async () => {
  etcd = await startEtcd();
  store = await openStore(etcd.endpoints);
});
afterAll(async () => {
  await store?.close();
  await etcd?.stop();
});

/** LeaseKeepAlive streams etcd has seen opened. */
async function keepAliveStreams(): Promise<number> {
  const text = await (await fetch(`${etcd.endpoints[0]}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('grpc_server_started_total{') && line.includes('grpc_method="LeaseKeepAlive"'))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

test('64 concurrent heartbeats on one keep-alive stream; a wrong token and an unknown session are refused alone', async () => {
  const sessions = await Promise.all(Array.from({ length: 64 }, () => openSession(store, 60_000)));
  const before = await keepAliveStreams();
  const results = await Promise.all(
    sessions.map((s, i) =>
      store.heartbeat(
        i === 9 ? { sessionId: s.sessionId, tokenHash: hashOf('not-the-token') } : i === 33 ? { sessionId: 's_unknown', tokenHash: s.credential.tokenHash } : s.credential,
      ),
    ),
  );
  expect((await keepAliveStreams()) - before).toBeLessThanOrEqual(1);
  expect(results[9]).toEqual({ kind: 'unauthenticated' });
  expect(results[33]).toEqual({ kind: 'session_not_found' });
  results.forEach((result, i) => {
    if (i !== 9 && i !== 33) expect(result).toMatchObject({ kind: 'alive', session: { sessionId: sessions[i]!.sessionId } });
  });
  // Later heartbeats reuse the same stream.
  const again = await keepAliveStreams();
  await Promise.all(sessions.slice(0, 8).map((s) => store.heartbeat(s.credential)));
  expect(await keepAliveStreams()).toBe(again);
});
