/**
 * The README points at client/examples/payout-worker.ts: keep it runnable by
 * running it, as a user would, against a real server.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';

const root = path.resolve(import.meta.dirname, '../..');
let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});

afterAll(async () => {
  await server?.stop();
});

describe('client/examples/payout-worker.ts', () => {
  it('pays three invoices and a two-account transfer against a real server, with rising tokens', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'client/examples/payout-worker.ts'],
      { cwd: root, env: { ...process.env, HOLDFAST_URL: server.url }, timeout: 60_000 },
    );
    expect(stdout).toContain('inv-1001: paid');
    expect(stdout).toContain('inv-1003: paid');
    expect(stdout).toContain('transfer: done');
    const tokens = [...stdout.matchAll(/\(token (\d+)\)/g)].map((m) => BigInt(m[1]!));
    expect(tokens).toHaveLength(5);
    for (let i = 1; i < tokens.length; i += 1) expect(tokens[i]! > tokens[i - 1]!).toBe(true);
    expect(stdout).toMatch(/lock_client_acquire_attempts_count\{outcome="granted"\} 5/);
    const info = await fetch(`${server.url}/v1/locks/${encodeURIComponent('account:alice')}`).then((r) => r.json());
    expect(info).toMatchObject({ held: false });
  }, 90_000);
});
