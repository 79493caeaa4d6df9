/**
 * Store conformance for the audit trail's issue-25 rules (lock/store/spi.ts `AuditHead`,
 * `pruneAudit`; lock/audit/chain.ts), run against every backend by audit-retention.conformance.test.ts:
 * - every append re-seals the head (last id and hash, and the checkpoint) with the current key;
 * - a prune deletes the oldest run older than `before`, moves the checkpoint to its last entry, and
 *   appends its own `audit.prune` entry, so verify from the checkpoint passes;
 * - a key rotated mid-run leaves a chain that verifies end to end while the ring holds both keys,
 *   each entry naming its key;
 * - deleting the oldest kept entry after a prune fails verify naming it.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, test } from 'vitest';
import { createAuditKeyring, verifyAuditChain, type AuditKeyring } from '../../../lock/audit/chain.js';
import type { AuditEntry } from '../../../contract/records.js';
import type { LockStore } from '../../../lock/store/spi.js';

export interface AuditStoreFactory {
  /** A fresh, initialised store sealing with `sealer`; `deleteEntry` removes one entry behind the store's back. */
  make(sealer: AuditKeyring): Promise<{ store: LockStore; deleteEntry(id: string): Promise<void>; cleanup(): Promise<void> }>;
}

const draft = (reason: string) => ({ actor: 'conformance', requestId: `req-${reason}`, reason });

export function describeAuditRetention(name: string, factory: AuditStoreFactory): void {
  describe(`audit retention conformance: ${name}`, () => {
    const cleanups: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0)) await cleanup();
    });
    const fresh = async (keys: Buffer[]) => {
      const sealer = createAuditKeyring(keys);
      const made = await factory.make(sealer);
      cleanups.push(made.cleanup);
      return { ...made, sealer };
    };
    const revokes = async (store: LockStore, n: number, label: string) => {
      const entries: AuditEntry[] = [];
      for (let i = 0; i < n; i++) entries.push((await store.forceRevoke({ key: `audit/${label}/${i}`, audit: draft(`${label} ${i}`) })).audit);
      return entries;
    };
    const chain = async (store: LockStore) => {
      const entries: AuditEntry[] = [];
      for await (const entry of store.readAuditChain()) entries.push(entry);
      return entries;
    };
    const verify = async (store: LockStore, sealer: AuditKeyring) => verifyAuditChain(store.readAuditChain(), { head: await store.readAuditHead(), sealer });

    test('every append seals the head with the current key; a new trail has an unsealed genesis head that verifies', async () => {
      const { store, sealer } = await fresh([randomBytes(32)]);
      expect(await store.readAuditHead()).toMatchObject({ lastId: '0', checkpointId: '0', seal: null });
      expect(await verify(store, sealer)).toMatchObject({ ok: true, entries: 0 });
      const [first, second] = await revokes(store, 2, 'seal');
      expect(first!.keyId).toBe(sealer.keyId);
      const head = await store.readAuditHead();
      expect(head).toMatchObject({ lastId: second!.id, lastHash: second!.hash, checkpointId: '0', keyId: sealer.keyId });
      expect(head.seal).toMatch(/^[0-9a-f]{64}$/);
      expect(sealer.checkHead({ ...head, seal: head.seal })).toBeNull();
      expect(await verify(store, sealer)).toEqual({ ok: true, entries: 2, headHash: second!.hash });
    });

    test('prune with a checkpoint, then verify: passes, proving every kept entry; the prune is audited', async () => {
      const { store, sealer } = await fresh([randomBytes(32)]);
      await revokes(store, 6, 'prune');
      const before = await chain(store);
      // The oldest run older than the fourth entry's instant (entries sharing an instant stay together).
      const cut = before[3]!.at;
      const expectedPruned = before.findIndex((e) => e.at >= cut);
      const result = await store.pruneAudit({ before: cut, audit: draft('retention') });
      expect(result.pruned).toBe(expectedPruned);
      const lastPruned = before[expectedPruned - 1];
      expect(result.checkpoint).toEqual(lastPruned ? { id: lastPruned.id, hash: lastPruned.hash } : { id: '0', hash: '0'.repeat(64) });
      expect(result.audit).toMatchObject({ id: '7', action: 'audit.prune', target: 'audit', outcome: expectedPruned > 0 ? 'PRUNED' : 'NOTHING_PRUNED', actor: 'conformance', reason: 'retention' });
      const after = await chain(store);
      expect(after.map((e) => e.id)).toEqual([...before.slice(expectedPruned).map((e) => e.id), '7']);
      const head = await store.readAuditHead();
      expect(head).toMatchObject({ lastId: '7', checkpointId: result.checkpoint.id, checkpointHash: result.checkpoint.hash });
      expect(await verify(store, sealer)).toEqual({ ok: true, entries: after.length, headHash: result.audit.hash });

      // Everything before now: all but the prune's own new entry go, and the chain still verifies.
      const all = await store.pruneAudit({ before: (await chain(store)).at(-1)!.at + 1, audit: draft('everything') });
      expect(all.pruned).toBe(after.length);
      expect(all.checkpoint).toEqual({ id: '7', hash: result.audit.hash });
      expect((await chain(store)).map((e) => e.id)).toEqual(['8']);
      expect(await verify(store, sealer)).toMatchObject({ ok: true, entries: 1 });
      // Appends go on from the head as before.
      const [next] = await revokes(store, 1, 'after');
      expect(next).toMatchObject({ id: '9', prevHash: all.audit.hash });
      expect(await verify(store, sealer)).toMatchObject({ ok: true, entries: 2 });
    });

    test('a prune with nothing older than `before` deletes nothing, keeps the checkpoint and is audited', async () => {
      const { store, sealer } = await fresh([]);
      const [first] = await revokes(store, 2, 'none');
      const result = await store.pruneAudit({ before: first!.at - 1, audit: draft('nothing') });
      expect(result).toMatchObject({ pruned: 0, checkpoint: { id: '0', hash: '0'.repeat(64) }, audit: { id: '3', outcome: 'NOTHING_PRUNED' } });
      expect(result.audit.keyId).toBeUndefined();
      expect(await verify(store, sealer)).toMatchObject({ ok: true, entries: 3 });
    });

    test('the audit key rotated mid-run: each entry names its key, and the chain verifies end to end with both keys held', async () => {
      const oldKey = randomBytes(32);
      const newKey = randomBytes(32);
      const { store, sealer } = await fresh([oldKey]);
      const oldId = sealer.keyId!;
      await revokes(store, 2, 'before-rotation');
      sealer.replaceKeys([newKey, oldKey]);
      const newId = sealer.keyId!;
      expect(newId).not.toBe(oldId);
      await revokes(store, 2, 'after-rotation');
      expect((await chain(store)).map((e) => e.keyId)).toEqual([oldId, oldId, newId, newId]);
      expect(await store.readAuditHead()).toMatchObject({ keyId: newId });
      expect(await verify(store, sealer)).toMatchObject({ ok: true, entries: 4 });
      // Without the previous key, the entries it sealed cannot be proved: verify names the first.
      expect(await verify(store, createAuditKeyring([newKey]))).toMatchObject({ ok: false, brokenAt: '1', problem: expect.stringContaining(oldId) });
      // A prune after the rotation checkpoints entries sealed with the old key; the new key alone then proves the rest.
      const third = (await chain(store))[2]!;
      await store.pruneAudit({ before: third.at, audit: draft('rotate-out') });
      const kept = await chain(store);
      if (kept.every((e) => e.keyId === newId)) expect(await verify(store, createAuditKeyring([newKey]))).toMatchObject({ ok: true });
      expect(await verify(store, sealer)).toMatchObject({ ok: true, entries: kept.length });
    });

    test('deleting the oldest kept entry after a prune fails verify naming it', async () => {
      const { store, sealer, deleteEntry } = await fresh([randomBytes(32)]);
      await revokes(store, 3, 'gap');
      const all = await chain(store);
      const result = await store.pruneAudit({ before: all.at(-1)!.at + 1, audit: draft('gap') });
      const [next] = await revokes(store, 2, 'gap-after');
      expect(await verify(store, sealer)).toMatchObject({ ok: true, entries: 3 });
      await deleteEntry(result.audit.id);
      expect(await verify(store, sealer)).toMatchObject({
        ok: false,
        brokenAt: result.audit.id,
        problem: expect.stringContaining(`entry ${result.audit.id} is missing`),
      });
      expect(next!.id).toBe(String(Number(result.audit.id) + 1));
    });
  });
}
