/**
 * The `holdfast` CLI, run as the package's bin against a real server: what the
 * runbooks tell on-call to type. Includes the audit chain's tamper check.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { httpClient } from '../support/http.js';
import { BIN } from '../support/server-process.js';
import { sharedPostgres, startServer, type TestServer } from '../support/server.js';

const run = promisify(execFile);

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

async function holdfast(server: TestServer, args: string[], token = server.operatorToken): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], {
      env: { ...process.env, HOLDFAST_URL: server.url, HOLDFAST_TOKEN: token, HOLDFAST_DATA_DIR: '/nonexistent' },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('holdfast CLI', () => {
  let server: TestServer;
  let api: ReturnType<typeof httpClient>;
  let sessionId: string;
  let token: string;

  beforeAll(async () => {
    server = await startServer({ store: 'postgres' });
    api = httpClient(server.url);
    sessionId = (await api.openSession({ owner: 'payout-worker-7', ttlMillis: 300000 })).body.sessionId;
    token = (await api.acquire('payouts/eu', { sessionId, ttlMillis: 600000 })).body.fencingToken;
    await api.acquire('payouts/us', { sessionId, ttlMillis: 600000 });
    await api.acquire('reports/daily', { sessionId, ttlMillis: 600000 });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('locks ls lists held locks as a table, --prefix filters, --json is machine-readable', async () => {
    const all = await holdfast(server, ['locks', 'ls']);
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/KEY\s+OWNER\s+SESSION\s+TOKEN\s+GRANTED\s+EXPIRES\s+WAITERS/);
    expect(all.stdout).toContain('payouts/eu');
    expect(all.stdout).toContain('payout-worker-7');
    const filtered = await holdfast(server, ['--json', 'locks', 'ls', '--prefix', 'payouts/']);
    const page = JSON.parse(filtered.stdout);
    expect(page.items.map((l: { key: string }) => l.key)).toEqual(['payouts/eu', 'payouts/us']);
  });

  test('locks show prints one lock', async () => {
    const shown = await holdfast(server, ['locks', 'show', 'payouts/eu']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`fencing token\\s+${token}`));
    const json = JSON.parse((await holdfast(server, ['--json', 'locks', 'show', 'nothing/here'])).stdout);
    expect(json).toEqual({ key: 'nothing/here', held: false, holders: [], waiterCount: 0 });
  });

  test("locks show prints a holder's value with its control and bidi characters escaped (no terminal sequence gets through)", async () => {
    const hostile = '\u001b[2J\u001b]0;pwned\u0007 invoice\u202Efdp.exe';
    // Its own session: the other tests count what the shared one holds.
    const holder = (await api.openSession({ owner: 'value-setter', ttlMillis: 300000 })).body.sessionId;
    await api.acquire('values/hostile', { sessionId: holder, ttlMillis: 600000, value: hostile });
    const shown = await holdfast(server, ['locks', 'show', 'values/hostile']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f\u202e]/);
    expect(shown.stdout).toContain('\\u{1b}[2J\\u{1b}]0;pwned\\u{7} invoice\\u{202e}fdp.exe');
    // --json keeps the value as stored (JSON escapes the controls itself).
    const json = JSON.parse((await holdfast(server, ['--json', 'locks', 'show', 'values/hostile'])).stdout);
    expect(json.holders[0].value).toBe(hostile);
  });

  test('revoke: TOKEN_MISMATCH exits 3 and changes nothing; the right token revokes', async () => {
    const mismatch = await holdfast(server, ['revoke', 'payouts/eu', '--reason', 'INC-7 stuck payout', '--expect-token', '999999']);
    expect(mismatch.code).toBe(3);
    expect(mismatch.stdout).toMatch(/nothing revoked/);
    expect((await api.read('payouts/eu')).body.held).toBe(true);

    const revoked = await holdfast(server, ['revoke', 'payouts/eu', '--reason', 'INC-7 stuck payout', '--expect-token', token]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toMatch(new RegExp(`revoked payouts/eu \\(fencing token ${token}\\); audit entry \\d+`));
    expect((await api.read('payouts/eu')).body.held).toBe(false);

    const missingReason = await holdfast(server, ['revoke', 'payouts/us']);
    expect(missingReason.code).not.toBe(0);
    expect(missingReason.stderr).toMatch(/--reason/);
  });

  test('a viewer token cannot revoke: exit 1 with the server’s reason', async () => {
    const refused = await holdfast(server, ['revoke', 'payouts/us', '--reason', 'x'], server.viewerToken);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/403 FORBIDDEN/);
  });

  test('sessions ls and sessions kill', async () => {
    const listed = await holdfast(server, ['sessions', 'ls']);
    expect(listed.stdout).toContain(sessionId);
    expect(listed.stdout).toMatch(/LOCKS/);
    const killed = await holdfast(server, ['sessions', 'kill', sessionId, '--reason', 'runaway worker']);
    expect(killed.code).toBe(0);
    expect(killed.stdout).toMatch(/killed .*released 2 lock\(s\)/);
    expect((await api.read('payouts/us')).body.held).toBe(false);
    const again = await holdfast(server, ['sessions', 'kill', sessionId, '--reason', 'again']);
    expect(again.code).toBe(3);
  });

  test('audit lists entries; audit --verify passes, then fails naming the entry altered in SQL', async () => {
    const audit = await holdfast(server, ['audit']);
    expect(audit.code).toBe(0);
    expect(audit.stdout).toMatch(/test-operator\s+lock\.revoke\s+payouts\/eu\s+\d+\s+REVOKED\s+INC-7 stuck payout/);
    const verified = await holdfast(server, ['audit', '--verify']);
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(/audit chain verified: \d+ entries/);

    const cluster = await sharedPostgres();
    const entries = JSON.parse((await holdfast(server, ['--json', 'audit'])).stdout).items as { id: string }[];
    const victim = entries[entries.length - 1]!.id; // the oldest entry: every later hash depends on it
    await cluster.sql(server.databaseUrl!, "UPDATE holdfast_audit SET reason = 'nothing to see here' WHERE id = $1", [victim]);
    const broken = await holdfast(server, ['audit', '--verify']);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toContain(`audit chain BROKEN at entry ${victim}`);
  });

  test('no CLI output ever shows a session’s sessionToken (tables and --json)', async () => {
    const opened = await api.openSession({ owner: 'token-leak-check', ttlMillis: 60000 });
    const leakSession = opened.body.sessionId as string;
    const sessionToken = opened.body.sessionToken as string;
    expect(sessionToken.length).toBeGreaterThanOrEqual(22);
    expect((await api.acquire('leak/check', { sessionId: leakSession })).status).toBe(200);
    const commands = [
      ['locks', 'ls'],
      ['--json', 'locks', 'ls'],
      ['locks', 'show', 'leak/check'],
      ['--json', 'locks', 'show', 'leak/check'],
      ['sessions', 'ls'],
      ['--json', 'sessions', 'ls'],
      ['--json', 'audit'],
      ['-o', 'wide', 'locks', 'ls'],
      ['-o', 'json', 'sessions', 'show', leakSession],
    ];
    // At once: each run is a process start, seconds apiece on a busy machine.
    const results = await Promise.all(commands.map((args) => holdfast(server, args)));
    results.forEach((result, i) => expect(result.code, commands[i]!.join(' ')).toBe(0));
    const all = results.flatMap((result) => [result.stdout, result.stderr]).join('\n');
    expect(all).toContain(leakSession);
    expect(all).not.toContain(sessionToken);
    await api.closeSession(leakSession);
  });

  test('an unreachable server is a clear error and exit 1', async () => {
    const result = await holdfast({ ...server, url: 'http://127.0.0.1:9' }, ['locks', 'ls']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/cannot reach the lock server at http:\/\/127\.0\.0\.1:9/);
  });
});
