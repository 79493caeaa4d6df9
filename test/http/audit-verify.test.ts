/**
 * Audit verification against the recorded head, on real PostgreSQL: deleting
 * the newest entries or altering one fails naming the entry; with an audit key,
 * a chain recomputed without it fails; every audit log event carries the head hash.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
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
    await sql(server, 'UPDATE holdfast_audit_head SET last_id = 4, last_hash = (SELECT hash FROM holdfast_audit WHERE id = 4)');
    expect((await admin.verify()).body).toMatchObject({ ok: true, entries: 4 });
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
