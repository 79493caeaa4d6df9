/**
 * On etcd a grant sent with the wait's id deletes the wait's key in the grant's own txn, and core
 * then sends no endWait for it (ab40707: AcquireWait.recordEndedByGrant). Nothing the fleet keeps
 * for that wait may outlive it: else every contended acquire leaves an entry behind in the
 * instance's memory for as long as the process runs.
 */
import { GRPCDeadlineExceededError, type Etcd3 } from 'etcd3';
import { describe, expect, it } from 'vitest';
import type { AcquireBatcher } from '../../lock/store/etcd/acquire-batcher.js';
import type { EtcdStore } from '../../lock/store/etcd/etcd-store.js';
import type { KeyLayout } from '../../lock/store/etcd/keys.js';
import type { RecordedWaits } from '../../lock/store/etcd/wait-record.js';
import { etcdStores, namespaceOf, openSession, withRawEtcd } from './helpers.js';

describe('a wait ended by its grant on etcd', () => {
  const fixture = etcdStores();

  it('leaves nothing in the fleet for that wait once the grant has ended its key', async () => {
    const store = await fixture.store();
    const instanceId = 'i_grant_ends_wait';
    await store.fleet.heartbeatInstance({ instanceId, ttlMillis: 60_000 });
    const [holder, waiter] = await Promise.all([openSession(store), openSession(store)]);
    const key = 'grant-ends-wait';
    const held = await store.tryAcquire({ key, session: holder.credential, ttlMillis: 60_000 });
    if (held.kind !== 'granted') throw new Error('expected a grant');

    const waitIds = Array.from({ length: 5 }, (_, i) => `w-grant-ends-${i}`);
    let token = held.grant.fencingToken;
    let holding = holder;
    for (const waitId of waitIds) {
      const next = holding === holder ? waiter : holder;
      await store.fleet.beginWait({ waitId, sessionId: next.credential.sessionId, key, instanceId, ttlMillis: 60_000, deadlineMillis: 60_000 });
      expect((await store.fleet.waiterCounts([key])).get(key)).toBe(1);
      expect((await store.release({ key, session: holding.credential, fencingToken: token })).kind).toBe('released');
      const granted = await store.tryAcquire({ key, session: next.credential, ttlMillis: 60_000, waitId });
      if (granted.kind !== 'granted') throw new Error(`expected a grant, got ${granted.kind}`);
      // The grant's write ended the wait: it counts no more, and core sends no end of its own.
      expect((await store.fleet.waiterCounts([key])).get(key) ?? 0).toBe(0);
      token = granted.grant.fencingToken;
      holding = next;
    }
    // What the store remembers of waits recorded through this process (for endWait without a scan; wait-record.ts).
    const remembered = (store as unknown as { ctx: { recordedWaits: RecordedWaits } }).ctx.recordedWaits;
    expect(remembered).toBeDefined();
    expect(waitIds.filter((waitId) => remembered.get(waitId) !== undefined)).toEqual([]);
    await store.release({ key, session: holding.credential, fencingToken: token });
  });
});

/**
 * A mutex try that carries its wait's record (recordsOnTry) records it in the failure branch of its
 * own txn. When that txn's answer is lost (no gRPC answer: it may have landed) the wait key may
 * exist though nobody was told; a later round (or call) carrying the same record may then be
 * granted, and its write must end that wait too: else the new holder counts as waiting on its own
 * key until its session ends.
 */
describe('a wait recorded by a try whose answer was lost, then granted', () => {
  const fixture = etcdStores();

  type Internals = { ctx: { recordedWaits: RecordedWaits; keys: KeyLayout }; grants: { acquires: AcquireBatcher } };
  const internals = (store: EtcdStore): Internals => store as unknown as Internals;

  const raw = <T>(use: (client: Etcd3) => Promise<T>): Promise<T> => withRawEtcd(fixture.etcd.endpoints, use);

  /** The wait ids etcd itself holds on `key` (read raw, not through the store). */
  async function waitIdsInEtcd(store: EtcdStore, key: string): Promise<string[]> {
    const prefix = internals(store).ctx.keys.waitsOn(key);
    const keys = await raw((client) => client.getAll().prefix(prefix).keys());
    return keys.map((k) => k.slice(prefix.length));
  }

  async function contended(key: string) {
    const store = await fixture.store();
    const instanceId = `i_${key}`;
    await store.fleet.heartbeatInstance({ instanceId, ttlMillis: 60_000 });
    const [holder, waiter] = await Promise.all([openSession(store), openSession(store)]);
    const held = await store.tryAcquire({ key, session: holder.credential, ttlMillis: 60_000 });
    if (held.kind !== 'granted') throw new Error(`expected a grant, got ${held.kind}`);
    const release = async () => expect((await store.release({ key, session: holder.credential, fencingToken: held.grant.fencingToken })).kind).toBe('released');
    return { store, instanceId, waiter, release };
  }

  /**
   * The txn every mutex try sends (acquire-batcher.ts) is applied by etcd, but its first answer is
   * lost: `meanwhile` runs (with the applied answer) before the try sees the loss and sends its next round.
   */
  function loseFirstAnswer(store: EtcdStore, meanwhile: (applied: { succeeded: boolean }) => Promise<void>): () => number {
    const acquires = internals(store).grants.acquires;
    const submit = acquires.submit.bind(acquires);
    let answers = 0;
    acquires.submit = async (lockKey, build) => {
      const answer = await submit(lockKey, build);
      answers += 1;
      if (answers > 1) return answer;
      await meanwhile(answer.response);
      throw new GRPCDeadlineExceededError('Deadline exceeded (test: the answer was lost)');
    };
    return () => answers;
  }

  it('ends it in the grant of a later round of the same try', async () => {
    const key = 'lost-answer-round';
    const waitId = 'w-lost-answer-round';
    const { store, instanceId, waiter, release } = await contended(key);
    const verdictKey = internals(store).ctx.keys.verdict(instanceId, waitId);
    const answers = loseFirstAnswer(store, async (applied) => {
      // Applied: the key was held by another session, so the failure branch recorded the wait.
      expect(applied.succeeded).toBe(false);
      expect(await waitIdsInEtcd(store, key)).toEqual([waitId]);
      // A deadlock verdict marked on that wait meanwhile (written raw here, as deadlock-verdicts.ts would).
      await raw(async (client) => client.put(verdictKey).value(JSON.stringify({ sessions: [], keys: [] })).exec());
      await release(); // before the try's next round, which then finds the key free
    });

    const granted = await store.tryAcquire({ key, session: waiter.credential, ttlMillis: 60_000, recordWait: { waitId, instanceId } });
    expect(answers()).toBe(2);
    expect(granted).toMatchObject({ kind: 'granted', existing: false });
    // The grant's write ended the wait the lost round recorded: it is not in etcd (nor its verdict), does not count, is not remembered.
    expect(await waitIdsInEtcd(store, key)).toEqual([]);
    expect(await raw((client) => client.get(verdictKey).string())).toBeNull();
    expect((await store.fleet.waiterCounts([key])).get(key) ?? 0).toBe(0);
    expect(internals(store).ctx.recordedWaits.get(waitId)).toBeUndefined();
  });

  it('ends it in the grant of a later call that carries the same record without its wait id', async () => {
    const key = 'lost-answer-call';
    const waitId = 'w-lost-answer-call';
    const { store, instanceId, waiter, release } = await contended(key);
    const first = await store.tryAcquire({ key, session: waiter.credential, ttlMillis: 60_000, recordWait: { waitId, instanceId } });
    expect(first).toMatchObject({ kind: 'held', waitRecorded: true });
    expect(await waitIdsInEtcd(store, key)).toEqual([waitId]);
    await release();

    // The caller never learnt of the first answer: it tries again through another instance's store,
    // which shares nothing in memory with the first, carrying the record and no wait id.
    const other = await fixture.store('shared', namespaceOf(store));
    const granted = await other.tryAcquire({ key, session: waiter.credential, ttlMillis: 60_000, recordWait: { waitId, instanceId } });
    expect(granted).toMatchObject({ kind: 'granted', existing: false });
    expect(await waitIdsInEtcd(store, key)).toEqual([]);
    expect((await other.fleet.waiterCounts([key])).get(key) ?? 0).toBe(0);
    expect(internals(other).ctx.recordedWaits.get(waitId)).toBeUndefined();
  });
});
