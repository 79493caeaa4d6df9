/**
 * Audit retention from the CLI (issue 25), on the embedded store with an audit key: `audit export`
 * writes JSON lines `audit verify-export` re-verifies offline (links alone, and with the key: HMACs
 * and the head's seal); `audit prune --before` (operator) deletes the old entries behind a sealed
 * checkpoint and is audited itself, and `audit --verify` and a fresh export still verify; a viewer
 * cannot prune; a tampered export fails naming the entry.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { verifyAuditExport } from '../../lock/audit/retention.js';
import { httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { holdfast } from './run-cli.js';

describe('holdfast audit export / verify-export / prune', () => {
  let server: TestServer;
  let dir: string;
  let keyFile: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'holdfast-audit-cli-'));
    keyFile = path.join(dir, 'audit.key');
    writeFileSync(keyFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
    server = await startServer({ store: 'embedded', env: { HOLDFAST_AUDIT_KEY_FILE: keyFile } });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('export verifies offline; prune with a checkpoint then verify passes; the prune is audited', async () => {
    const operator = httpClient(server.url).admin(server.operatorToken);
    for (let i = 0; i < 5; i++) expect((await operator.revoke(`cli-audit/${i}`, { reason: `old ${i}` })).status).toBe(200);

    const exported = path.join(dir, 'before.jsonl');
    expect((await holdfast(server, ['audit', 'export', '--file', exported])).code).toBe(0);
    const lines = readFileSync(exported, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines[0]).toEqual({ checkpoint: { id: '0', hash: '0'.repeat(64) } });
    expect(lines.slice(1, -1).map((e) => e.id)).toEqual(['1', '2', '3', '4', '5']);
    expect(lines.at(-1).head).toMatchObject({ lastId: '5', seal: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const keyed = await holdfast(server, ['audit', 'verify-export', exported, '--audit-key-file', keyFile]);
    expect(keyed.stdout).toContain('audit export verified with the audit key: 5 entries');
    expect(keyed.code).toBe(0);

    // A viewer cannot prune (A4p is the operator's).
    expect((await httpClient(server.url).admin(server.viewerToken).pruneAudit({ before: Date.now(), reason: 'viewer' })).status).toBe(403);

    const pruned = await holdfast(server, ['audit', 'prune', '--before', new Date(Date.now() + 60_000).toISOString(), '--reason', 'retention: 90 days']);
    expect(pruned.stderr).toBe('');
    expect(pruned.stdout).toMatch(/^pruned 5 entries before .*; checkpoint entry 5 \(hash [0-9a-f]{64}\); audit entry 6$/m);
    expect(pruned.code).toBe(0);
    expect((await httpClient(server.url).admin(server.viewerToken).verify()).body).toMatchObject({ ok: true, entries: 1 });
    const entry = (await operator.audit('?action=audit.prune')).body.items[0];
    expect(entry).toMatchObject({ id: '6', actor: 'test-operator', action: 'audit.prune', target: 'audit', outcome: 'PRUNED', reason: 'retention: 90 days' });
    expect(server.logs.find((l) => l.event === 'audit_pruned')).toMatchObject({ actor: 'test-operator', pruned: 5, checkpointId: '5', auditId: '6' });

    const after = path.join(dir, 'after.jsonl');
    expect((await holdfast(server, ['audit', 'export', '--file', after])).code).toBe(0);
    const afterLines = readFileSync(after, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(afterLines[0]).toEqual({ checkpoint: { id: '5', hash: lines[5].hash } });
    expect((await holdfast(server, ['audit', 'verify-export', after, '--audit-key-file', keyFile])).stdout).toContain('verified with the audit key: 1 entries');

    // A tampered export fails naming the entry; so does one whose checkpoint was moved.
    const tampered = path.join(dir, 'tampered.jsonl');
    writeFileSync(tampered, readFileSync(exported, 'utf8').replace('"old 2"', '"nothing here"'));
    const broken = await holdfast(server, ['audit', 'verify-export', tampered, '--audit-key-file', keyFile]);
    expect(broken.stdout).toMatch(/BROKEN at entry 3: hash does not match/);
    expect(broken.code).toBe(1);

    // Offline, without the key: the links from checkpoint to head are proved, the HMACs are not (said so).
    const linksOnly = await verifyAuditExport(afterLines);
    expect(linksOnly).toMatchObject({ ok: true, entries: 1 });
    // Nothing older: still audited, nothing deleted.
    expect((await operator.pruneAudit({ before: 0, reason: 'nothing' })).body).toMatchObject({ pruned: 0, checkpoint: { id: '5' }, auditId: '7' });
    // Six CLI processes, each starting node (and tsx in a checkout): this bounds a failure only.
  }, 300_000);
});
