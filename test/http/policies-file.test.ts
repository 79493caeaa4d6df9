/**
 * HOLDFAST_POLICIES_FILE on a real server (issue 26): a bad file stops the start naming its line;
 * A8 answers the policies in force to a viewer; an edit takes effect within 5 s without a restart
 * (the poll reads the file every second; a watch usually sees it at once); a broken edit keeps the
 * last good policies and is logged (`policies_rejected`, C4) with the line.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually, httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';

const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-policies-http-'));
const file = path.join(dir, 'policies.yaml');
/** Replaces the file as editors do (write a sibling, rename over): never a half-written file. */
function edit(text: string): void {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

const FIRST = `- name: payouts\n  prefix: payouts/\n  maxHoldMillis: 3600000\n`;

describe('a server with a policies file', () => {
  let server: TestServer;
  let policies: () => Promise<{ status: number; body: any }>;
  beforeAll(async () => {
    edit(FIRST);
    server = await startServer({ env: { HOLDFAST_POLICIES_FILE: file } });
    const viewer = `Bearer ${server.viewerToken}`;
    policies = () => httpClient(server.url).call('GET', '/v1/admin/policies', undefined, { authorization: viewer });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('A8 answers the policies in force to a viewer, and 401 without a token', async () => {
    expect(await policies()).toMatchObject({ status: 200, body: { items: [{ name: 'payouts', prefix: 'payouts/', maxHoldMillis: 3600000 }] } });
    const anonymous = await httpClient(server.url).call('GET', '/v1/admin/policies');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe('UNAUTHENTICATED');
  });

  test('an edit takes effect within 5 s without a restart, and is logged', async () => {
    const editedAt = Date.now();
    edit(`${FIRST}- name: reports\n  prefix: reports/\n  maxHoldMillis: 14400000\n`);
    await eventually(async () => (await policies()).body.items.length === 2, 5_000, 50);
    const tookMillis = Date.now() - editedAt;
    process.stdout.write(`policies: an edit was in force ${tookMillis} ms after it was written\n`);
    expect(tookMillis).toBeLessThanOrEqual(5_000);
    expect((await policies()).body.items.map((p: { name: string }) => p.name)).toEqual(['payouts', 'reports']);
    expect(server.logs.some((line) => line.event === 'policies_loaded' && line.policies === 2 && line.file === file)).toBe(true);
  });

  test('a broken edit keeps the last good policies and logs why, naming the line', async () => {
    const before = (await policies()).body;
    edit(`- name: payouts\n  prefix: payouts/\n- name: payouts\n  prefix: ledger/\n`);
    const rejected = await eventually(async () => server.logs.find((line) => line.event === 'policies_rejected'), 5_000, 50);
    expect(rejected).toMatchObject({ level: 'error', requestId: 'policies', file, message: `${file}:3: policy 2: the name "payouts" is already used (line 1)` });
    expect((await policies()).body).toEqual(before);

    // Fixed again: taken.
    edit(FIRST);
    await eventually(async () => (await policies()).body.items.length === 1, 5_000, 50);
  });
});

test('a bad policies file stops the start, naming the line', async () => {
  const badDir = mkdtempSync(path.join(tmpdir(), 'holdfast-policies-bad-'));
  const bad = path.join(badDir, 'policies.yaml');
  writeFileSync(bad, `- name: payouts\n  prefix: payouts/\n  maxTtlMillis: 60000\n  defaultTtlMillis: 90000\n`);
  try {
    await expect(startServer({ env: { HOLDFAST_POLICIES_FILE: bad } })).rejects.toThrow(
      `${bad}:4: policy 1 ("payouts"): defaultTtlMillis must not exceed maxTtlMillis`,
    );
  } finally {
    rmSync(badDir, { recursive: true, force: true });
  }
});
