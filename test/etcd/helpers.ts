/** Shared pieces of the etcd store tests: fresh isolated stores, sessions, and etcd's own request counters. */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { startEtcd, type EtcdNode } from '../support/etcd.js';
import { EtcdStore, type EtcdStoreOptions, type WaitShape } from '../../lock/store/etcd/etcd-store.js';
import type { SessionCredential, SessionRecord } from '../../lock/store/spi.js';

export type ExtraStoreOptions = Pick<EtcdStoreOptions, 'clock' | 'auditSealer'>;

/** A store in its own namespace, so tests sharing one etcd never see each other's keys. */
export async function openStore(
  endpoints: string[],
  waitShape: WaitShape = 'shared',
  namespace: string = randomUUID(),
  extra: ExtraStoreOptions = {},
): Promise<EtcdStore> {
  const store = new EtcdStore({ endpoints, namespace, waitShape, ...extra });
  await store.init();
  return store;
}

export const hashOf = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

/** An open session and the credential its holder presents (the token itself never reaches the store). */
export interface TestSession extends SessionRecord {
  credential: SessionCredential;
}

export async function openSession(store: EtcdStore, ttlMillis = 15_000, owner = 'test'): Promise<TestSession> {
  const sessionId = randomUUID();
  const tokenHash = hashOf(randomBytes(24).toString('base64url'));
  const record = await store.openSession({ sessionId, owner, ttlMillis, tokenHash });
  return { ...record, credential: { sessionId, tokenHash } };
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
export function etcdStores(): {
  readonly etcd: EtcdNode;
  store(shape?: WaitShape, namespace?: string, extra?: ExtraStoreOptions): Promise<EtcdStore>;
} {
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
    store: async (shape: WaitShape = 'shared', namespace?: string, extra?: ExtraStoreOptions) => {
      const store = await openStore(running().endpoints, shape, namespace, extra);
      opened.push(store);
      return store;
    },
  };
}

/**
 * Polls `check` until it answers true, or fails at `timeoutMs`: for what etcd
 * decides on its own clock (a lease running out), which a test can only observe.
 * A 2 s lease is gone 2–3 s after its last keep-alive on a quiet machine; the default
 * deadline is ≥ 10× that (it only bounds a failing test).
 */
export async function until(check: () => Promise<boolean>, timeoutMs = 30_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** `use` with a plain etcd3 client of its own on `endpoints` (what etcd holds, read or written past the store), closed after. */
export async function withRawEtcd<T>(endpoints: string[], use: (client: Etcd3) => Promise<T>): Promise<T> {
  const client = new Etcd3({ hosts: endpoints });
  try {
    return await use(client);
  } finally {
    client.close();
  }
}
