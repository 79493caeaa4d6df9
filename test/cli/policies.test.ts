/** `holdfast policies ls` (issue 26): the policies the server enforces, as a table, wide and JSON; a viewer may read them. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { holdfast } from './run-cli.js';

const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-cli-policies-'));
let server: TestServer;
let bare: TestServer;
beforeAll(async () => {
  const file = path.join(dir, 'policies.yaml');
  writeFileSync(
    file,
    `- {name: payouts, prefix: payouts/, maxHoldMillis: 3600000, maxTtlMillis: 60000, defaultTtlMillis: 30000, maxWaiters: 50}\n` +
      `- {name: reports, prefix: reports/, maxHoldMillis: 1500}\n`,
  );
  [server, bare] = await Promise.all([startServer({ env: { HOLDFAST_POLICIES_FILE: file } }), startServer()]);
});
afterAll(async () => {
  await Promise.all([server?.stop(), bare?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

describe('holdfast policies ls', () => {
  test('a table in file order, durations in their largest whole unit; -o wide in milliseconds', async () => {
    const table = await holdfast(server, ['policies', 'ls'], { token: server.viewerToken });
    expect(table.code).toBe(0);
    const rows = table.stdout.trim().split('\n').map((line) => line.trim().split(/\s{2,}|\s*│\s*/).filter(Boolean));
    expect(table.stdout).toMatch(/NAME.*PREFIX.*MAX HOLD.*MAX TTL.*DEFAULT TTL.*MAX WAITERS/);
    expect(rows.find((row) => row[0] === 'payouts')).toEqual(['payouts', 'payouts/', '1h', '1m', '30s', '50']);
    expect(rows.find((row) => row[0] === 'reports')).toEqual(['reports', 'reports/', '1500ms', '-', '-', '-']);
    const wide = await holdfast(server, ['-o', 'wide', 'policies', 'ls']);
    expect(wide.stdout).toMatch(/MAX HOLD \(MS\)/);
    expect(wide.stdout).toContain('3600000');
  });

  test('-o json is the server’s records', async () => {
    const json = await holdfast(server, ['-o', 'json', 'policies', 'ls']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([
      { name: 'payouts', prefix: 'payouts/', maxHoldMillis: 3600000, maxTtlMillis: 60000, defaultTtlMillis: 30000, maxWaiters: 50 },
      { name: 'reports', prefix: 'reports/', maxHoldMillis: 1500 },
    ]);
  });

  test('a server without a policies file says so', async () => {
    const none = await holdfast(bare, ['policies', 'ls']);
    expect(none.code).toBe(0);
    expect(none.stdout).toContain('no lock policies');
    expect(JSON.parse((await holdfast(bare, ['--json', 'policies', 'ls'])).stdout)).toEqual([]);
  });
});

describe('holdfast audit --policy', () => {
  test('lists only the entries about keys under that policy (longest prefix wins); an unknown policy is an error', async () => {
    const client = httpClient(server.url);
    const session = (await client.openSession({ owner: 'audited', ttlMillis: 120_000 })).body.sessionId as string;
    for (const key of ['payouts/eu-run', 'reports/daily', 'unpolicied/x']) {
      expect((await client.acquire(key, { sessionId: session, ttlMillis: 60_000 })).status).toBe(200);
      expect((await holdfast(server, ['revoke', key, '--reason', `policy test ${key}`])).code).toBe(0);
    }
    const json = await holdfast(server, ['-o', 'json', 'audit', '--policy', 'payouts']);
    expect(json.code).toBe(0);
    const targets = (JSON.parse(json.stdout) as { items: { target: string }[] }).items.map((entry) => entry.target);
    expect(targets).toEqual(['payouts/eu-run']);
    const unknown = await holdfast(server, ['audit', '--policy', 'nope']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no lock policy "nope"');
  });
});
