import { expect, test } from 'vitest';
import { GENESIS_HASH, canonicalJson, createAuditSealer, sealAuditEntry, verifyAuditChain } from '../../lock/audit/chain.js';
import type { AuditEntry } from '../../contract/records.js';

function chain(n: number): AuditEntry[] {
  const entries: AuditEntry[] = [];
  let prev = GENESIS_HASH;
  for (let i = 1; i <= n; i++) {
    const entry = sealAuditEntry(prev, {
      id: String(i),
      at: 1_700_000_000_000 + i,
      actor: 'alice',
      action: 'lock.revoke',
      target: `key-${i}`,
      ...(i % 2 ? { fencingToken: String(100 + i) } : {}),
      reason: `reason ${i}`,
      outcome: 'REVOKED',
      requestId: `req-${i}`,
    });
    entries.push(entry);
    prev = entry.hash;
  }
  return entries;
}

test('canonical JSON sorts keys and drops undefined', () => {
  expect(canonicalJson({ b: 1, a: { d: undefined, c: [2, 'x'] } })).toBe('{"a":{"c":[2,"x"]},"b":1}');
});

test('an intact chain verifies and reports its head', async () => {
  const entries = chain(5);
  expect(await verifyAuditChain(entries)).toEqual({ ok: true, entries: 5, headHash: entries[4]!.hash });
  expect(await verifyAuditChain([])).toEqual({ ok: true, entries: 0, headHash: GENESIS_HASH });
});

test('an altered field names the altered entry', async () => {
  const entries = chain(5);
  entries[2] = { ...entries[2]!, reason: 'edited' };
  expect(await verifyAuditChain(entries)).toMatchObject({ ok: false, brokenAt: '3', problem: expect.stringMatching(/content/) });
});

test('a deleted entry breaks the link of the one after it', async () => {
  const entries = chain(5);
  entries.splice(1, 1);
  expect(await verifyAuditChain(entries)).toMatchObject({ ok: false, brokenAt: '3', problem: expect.stringMatching(/prevHash/) });
});

test('re-sealing an edited entry still breaks the next link', async () => {
  const entries = chain(4);
  const { prevHash, hash: _hash, ...body } = entries[1]!;
  entries[1] = sealAuditEntry(prevHash, { ...body, actor: 'mallory' });
  expect(await verifyAuditChain(entries)).toMatchObject({ ok: false, brokenAt: '3' });
});

const headOf = (entries: AuditEntry[]) => ({ lastId: entries.at(-1)!.id, lastHash: entries.at(-1)!.hash });

test('deleting the newest entries fails against the recorded head, naming what is missing', async () => {
  const entries = chain(6);
  const head = headOf(entries);
  expect(await verifyAuditChain(entries, { head })).toEqual({ ok: true, entries: 6, headHash: head.lastHash });
  expect(await verifyAuditChain(entries.slice(0, 4), { head })).toMatchObject({
    ok: false,
    brokenAt: '5',
    problem: expect.stringContaining('entries 5..6 are missing'),
  });
  expect(await verifyAuditChain(entries.slice(0, 5), { head })).toMatchObject({ ok: false, brokenAt: '6', problem: expect.stringContaining('entry 6 is missing') });
  expect(await verifyAuditChain([], { head })).toMatchObject({ ok: false, brokenAt: '1' });
});

test('entries appended after the head was read are not mistaken for tampering', async () => {
  const entries = chain(6);
  expect(await verifyAuditChain(entries, { head: headOf(entries.slice(0, 4)) })).toEqual({ ok: true, entries: 4, headHash: entries[3]!.hash });
});

test('a head whose hash differs from the last entry fails', async () => {
  const entries = chain(3);
  expect(await verifyAuditChain(entries, { head: { lastId: '3', lastHash: 'f'.repeat(64) } })).toMatchObject({ ok: false, brokenAt: '3' });
});

test('with a key, an unkeyed or wrong-key chain fails and a keyed one passes', async () => {
  const key = Buffer.alloc(32, 7);
  const keyed = createAuditSealer(key);
  const sealed: AuditEntry[] = [];
  let prev = GENESIS_HASH;
  for (const entry of chain(3)) {
    const { prevHash: _p, hash: _h, ...body } = entry;
    const next = keyed.seal(prev, body);
    sealed.push(next);
    prev = next.hash;
  }
  expect(await verifyAuditChain(sealed, { sealer: keyed, head: headOf(sealed) })).toMatchObject({ ok: true, entries: 3 });
  const unkeyed = chain(3);
  expect(await verifyAuditChain(unkeyed, { sealer: keyed, head: headOf(unkeyed) })).toMatchObject({ ok: false, brokenAt: '1' });
  expect(await verifyAuditChain(sealed, { sealer: createAuditSealer(Buffer.alloc(32, 8)) })).toMatchObject({ ok: false, brokenAt: '1' });
  expect(await verifyAuditChain(sealed)).toMatchObject({ ok: false, brokenAt: '1' });
});
