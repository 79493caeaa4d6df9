import { expect, test } from 'vitest';
import { GENESIS_HASH, canonicalJson, sealAuditEntry, verifyAuditChain } from '../../lock/audit/chain.js';
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
