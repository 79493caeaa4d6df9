/** Shared pieces of the etcd store tests: fresh isolated stores, sessions, and etcd's own request counters. */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { startEtcd, type EtcdNode } from '../support/etcd.js';
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

/**
 * One real etcd for a test file, and stores opened on it that are checked and
 * closed after every test: no watcher may outlive the wait that opened it.
 */
export function etcdStores(): { readonly etcd: EtcdNode; store(shape?: WaitShape, namespace?: string): Promise<EtcdStore> } {
  let etcd: EtcdNode | undefined;
  const opened: EtcdStore[] = [];
  beforeAll(async () => {
    etcd = await startEtcd();
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) {
      expect(store.openWatchCount()).toBe(0);
      await store.close();
    }
  });
  afterAll(async () => {
    await etcd?.stop();
  });
  const running = (): EtcdNode => {
    if (!etcd) throw new Error('etcd is started in beforeAll');
    return etcd;
  };
  return {
    get etcd() {
      return running();
    },
    // A plain function (no `this`), so tests can take it off the fixture.
    store: async (shape: WaitShape = 'shared', namespace?: string) => {
      const store = await openStore(running().endpoints, shape, namespace);
      opened.push(store);
      return store;
    },
  };
}
