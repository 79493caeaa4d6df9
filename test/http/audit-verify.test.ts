/**
 * Audit verification against the recorded head, on real PostgreSQL: deleting
 * the newest entries or altering one fails naming the entry; with an audit key,
 * a chain recomputed without it fails; every audit log event carries the head hash.
 *
 * Issue 25, "deleting entries and rewinding the head (with and without the key at hand): fails
 * naming the entry". Read as: the database writer deletes the newest entries and rewinds the head
 * (1) without the audit key — leaving the old seal, writing none, or sealing with a key they made up:
 * the head's seal fails on every instance, naming the head's entry; (2) with the key at hand (or
 * replaying a seal they saved when the head was there): the seal holds, and the instance that saw the
 * deleted entries committed (its witness) names them; an instance that never saw them cannot tell
 * (lock/audit/witness.ts, README "Audit trail").
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadAuditSealer } from '../../lock/audit/audit-key.js';
import { createAuditSealer } from '../../lock/audit/chain.js';
import type { AuditEntry } from '../../contract/records.js';
import { httpClient } from '../support/http.js';
import { sharedPostgres, startServer, type TestServer } from '../support/server.js';

async function sql(server: TestServer, statement: string, params: unknown[] = []) {
  return (await sharedPostgres()).sql(server.databaseUrl!, statement, params);
}

async function appendEntries(server: TestServer, n: number) {
  const admin = httpClient(server.url).admin(server.operatorToken);
  for (let i = 0; i < n; i++) expect((await admin.revoke(`audit/${i}`, { reason: `test ${i}` })).status).toBe(200);
}

describe('audit verify on postgres, unkeyed', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ store: 'postgres' });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('deleting the newest N entries fails naming the missing ones; altering one names it', async () => {
    await appendEntries(server, 6);
    const admin = httpClient(server.url).admin(server.viewerToken);
    expect((await admin.verify()).body).toMatchObject({ ok: true, entries: 6 });
    // Every audit log event carries the chain head after its entry.
    const head = (await sql(server, 'SELECT last_hash FROM holdfast_audit_head')).rows[0].last_hash;
    const events = server.logs.filter((l) => l.event === 'lock_force_revoked');
    expect(events).toHaveLength(6);
    expect(events.at(-1)!.auditHeadHash).toBe(head);

    await sql(server, 'DELETE FROM holdfast_audit WHERE id > 4');
    expect((await admin.verify()).body).toEqual({
      ok: false,
      entries: 4,
      brokenAt: '5',
      problem: expect.stringContaining('entries 5..6 are missing'),
    });
    // Rewinding the head behind the deletion (issue 25): the server that saw entry 6 committed names
    // the missing entries, even without an audit key (there is no key to seal the head with).
    await sql(server, 'UPDATE holdfast_audit_head SET last_id = 4, last_hash = (SELECT hash FROM holdfast_audit WHERE id = 4)');
    expect((await admin.verify()).body).toEqual({
      ok: false,
      entries: 4,
      brokenAt: '5',
      problem: expect.stringContaining('entries 5..6 are missing (deleted, and the head rewound)'),
    });
    await sql(server, `UPDATE holdfast_audit SET reason = 'nothing to see' WHERE id = 2`);
    expect((await admin.verify()).body).toMatchObject({ ok: false, brokenAt: '2', problem: expect.stringContaining('content') });
  });
});

describe('audit verify on postgres, keyed (HOLDFAST_AUDIT_KEY_FILE)', () => {
  let server: TestServer;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'holdfast-audit-key-'));
    const keyFile = path.join(dir, 'audit.key');
    writeFileSync(keyFile, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
    server = await startServer({ store: 'postgres', env: { HOLDFAST_AUDIT_KEY_FILE: keyFile } });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a chain recomputed without the key (entries and head rewritten) fails verify', async () => {
    await appendEntries(server, 3);
    const admin = httpClient(server.url).admin(server.viewerToken);
    expect((await admin.verify()).body).toMatchObject({ ok: true, entries: 3 });

    // Someone with write access alters entry 2 and recomputes every hash after it, without the key.
    const rows = (await admin.audit('?limit=100')).body.items.reverse() as AuditEntry[];
    const unkeyed = createAuditSealer();
    let prev = '0'.repeat(64);
    for (const entry of rows) {
      const { prevHash: _p, hash: _h, ...body } = entry;
      const resealed = unkeyed.seal(prev, entry.id === '2' ? { ...body, reason: 'rewritten' } : body);
      await sql(server, 'UPDATE holdfast_audit SET reason = $2, prev_hash = $3, hash = $4 WHERE id = $1', [
        entry.id,
        resealed.reason,
        resealed.prevHash,
        resealed.hash,
      ]);
      prev = resealed.hash;
    }
    await sql(server, 'UPDATE holdfast_audit_head SET last_hash = $1', [prev]);
    expect((await admin.verify()).body).toMatchObject({ ok: false, brokenAt: '1', problem: expect.stringContaining('audit key') });
  });
});

describe('audit verify on postgres, keyed: deleting entries and rewinding the head', () => {
  let first: TestServer;
  let second: TestServer;
  let dir: string;
  let keyFile: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'holdfast-audit-rewind-'));
    keyFile = path.join(dir, 'audit.key');
    writeFileSync(keyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
    first = await startServer({ store: 'postgres', env: { HOLDFAST_AUDIT_KEY_FILE: keyFile } });
    // A second instance on the same database: it never saw the entries committed (no witness).
    second = await startServer({ store: 'postgres', env: { HOLDFAST_AUDIT_KEY_FILE: keyFile, DATABASE_URL: first.databaseUrl! } });
  });
  afterAll(async () => {
    await second?.stop();
    await first?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('without the key the head cannot be re-sealed (every instance names it); with it, the witness names the deleted entries', async () => {
    await appendEntries(first, 4);
    const sealedAt4 = (await sql(first, 'SELECT key_id, seal FROM holdfast_audit_head')).rows[0] as { key_id: string; seal: string };
    const admin = httpClient(first.url).admin(first.viewerToken);
    const elsewhere = httpClient(second.url).admin(second.viewerToken);
    for (let i = 4; i < 6; i++) expect((await httpClient(first.url).admin(first.operatorToken).revoke(`audit/${i}`, { reason: `test ${i}` })).status).toBe(200);
    expect((await admin.verify()).body).toMatchObject({ ok: true, entries: 6 });
    // (The second instance verifies nothing yet: reading the sealed head of entry 6 would make it a witness too.)

    await sql(first, 'DELETE FROM holdfast_audit WHERE id > 4');
    const hash4 = (await sql(first, 'SELECT hash FROM holdfast_audit WHERE id = 4')).rows[0].hash as string;
    const rewound = { lastId: '4', lastHash: hash4, checkpointId: '0', checkpointHash: '0'.repeat(64) };
    await sql(first, 'UPDATE holdfast_audit_head SET last_id = 4, last_hash = $1', [hash4]);
    const headProblem = (instance: typeof admin, problem: string) =>
      instance.verify().then((r) => expect(r.body).toEqual({ ok: false, entries: 4, brokenAt: '4', problem: expect.stringContaining(problem) }));
    const witnessed = () =>
      admin.verify().then((r) => expect(r.body).toMatchObject({ ok: false, brokenAt: '5', problem: expect.stringContaining('entries 5..6 are missing') }));

    // Without the key: the head moved without a seal (the seal is cleared when the head moves without one).
    await witnessed();
    await headProblem(elsewhere, 'carries no seal');
    // Without the key: sealed as an unkeyed trail would be.
    const unkeyed = createAuditSealer().sealHead(rewound);
    await sql(first, 'UPDATE holdfast_audit_head SET key_id = NULL, seal = $1', [unkeyed.seal]);
    await witnessed();
    await headProblem(elsewhere, 'sealed without an audit key');
    // Without the key: sealed with a key of their own, under this key's id or their own.
    const forged = createAuditSealer(randomBytes(32)).sealHead(rewound);
    await sql(first, 'UPDATE holdfast_audit_head SET key_id = $1, seal = $2', [sealedAt4.key_id, forged.seal]);
    await headProblem(elsewhere, 'does not match its seal');
    await sql(first, 'UPDATE holdfast_audit_head SET key_id = $1, seal = $2', [forged.keyId, forged.seal]);
    await headProblem(elsewhere, 'which this server');
    await witnessed();

    // With the key at hand (or the seal saved when the head was at 4): the seal holds. The instance that
    // saw entries 5 and 6 committed names them; one that never saw them has nothing to tell it (documented).
    const genuine = (await loadAuditSealer(keyFile)).sealHead(rewound);
    expect(genuine).toEqual({ keyId: sealedAt4.key_id, seal: sealedAt4.seal });
    await sql(first, 'UPDATE holdfast_audit_head SET key_id = $1, seal = $2', [genuine.keyId, genuine.seal]);
    await witnessed();
    expect((await elsewhere.verify()).body).toMatchObject({ ok: true, entries: 4 });
  });
});
