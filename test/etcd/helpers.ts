/** Shared pieces of the etcd store tests: fresh isolated stores, sessions, and etcd's own request counters. */
import { randomUUID } from 'node:crypto';
import { EtcdStore, type WaitShape } from '../../lock/store/etcd/etcd-store.js';
import type { SessionRecord } from '../../lock/store/spi.js';

/** A store in its own namespace, so tests sharing one etcd never see each other's keys. */
export async function openStore(endpoints: string[], waitShape: WaitShape = 'shared', namespace: string = randomUUID()): Promise<EtcdStore> {
  const store = new EtcdStore({ endpoints, namespace, waitShape });
  await store.init();
  return store;
}

export function sessionRecord(now: number, ttlMillis = 15_000, owner = 'test'): SessionRecord {
  return { sessionId: randomUUID(), owner, ttlMillis, createdAt: now, lastHeartbeatAt: now, expiresAt: now + ttlMillis };
}

export async function openSession(store: EtcdStore, now = Date.now(), ttlMillis = 15_000, owner = 'test'): Promise<SessionRecord> {
  return store.openSession(sessionRecord(now, ttlMillis, owner));
}

/**
 * KV requests etcd has received (Range + Txn + Put + DeleteRange), read from its
 * own Prometheus counters: what the store really sent, not what it says it sent.
 */
export async function etcdKvRequests(endpoint: string): Promise<number> {
  const text = await (await fetch(`${endpoint}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('grpc_server_started_total{') && line.includes('grpc_service="etcdserverpb.KV"')) {
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return total;
}

export function elapsedSince(start: number): number {
  return performance.now() - start;
}

/** The namespace a store was opened in, to open a second "server instance" on the same state. */
export function namespaceOf(store: EtcdStore): string {
  return store.keyRoot.split('/').at(-2)!;
}
