/**
 * `holdfast lock KEY -- CMD`, run as the package's bin against a real server:
 * mutual exclusion between two invocations, exit codes (CMD's, 3 not granted,
 * 4 lock lost), the lock's environment, signal forwarding and clean-up.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually, httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { holdfast, startCli } from './run-cli.js';

describe('holdfast lock', () => {
  let server: TestServer;
  let api: ReturnType<typeof httpClient>;
  let dir: string;

  beforeAll(async () => {
    server = await startServer({ store: 'postgres' });
    api = httpClient(server.url);
    dir = mkdtempSync(path.join(tmpdir(), 'holdfast-lock-cli-'));
  });
  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

  test('two at once on one key run one after the other, each with its own fencing token', async () => {
    const log = path.join(dir, 'mutex.log');
    const go = path.join(dir, 'mutex.go');
    // Each holder logs start, waits for the test's go-ahead, logs end: an overlap would interleave the lines.
    const job = `echo "start $HOLDFAST_FENCING_TOKEN" >> ${log}; while [ ! -e ${go} ]; do sleep 0.05; done; echo "end $HOLDFAST_FENCING_TOKEN" >> ${log}`;
    const first = startCli(server, ['lock', 'jobs/mutex', '--ttl', '5000', '--', 'sh', '-c', job]);
    const second = startCli(server, ['lock', 'jobs/mutex', '--ttl', '5000', '--', 'sh', '-c', job]);
    // One runs, the other is parked waiting for the key on the server.
    await eventually(async () => lines(log).length === 1 && (await api.read('jobs/mutex')).body.waiterCount >= 1, 30_000);
    expect(lines(log)).toHaveLength(1);
    writeFileSync(go, '');
    const results = await Promise.all([first.done, second.done]);
    expect(results.map((r) => r.code)).toEqual([0, 0]);

    const logged = lines(log).map((line) => line.split(' ') as [string, string]);
    expect(logged.map(([what]) => what)).toEqual(['start', 'end', 'start', 'end']);
    expect(logged[0]![1]).toBe(logged[1]![1]);
    expect(logged[2]![1]).toBe(logged[3]![1]);
    expect(BigInt(logged[2]![1])).toBeGreaterThan(BigInt(logged[0]![1]));
    expect((await api.read('jobs/mutex')).body.held).toBe(false);
  });

  test("CMD's exit code is passed through, and CMD sees HOLDFAST_LOCK_KEY and HOLDFAST_FENCING_TOKEN", async () => {
    const result = await holdfast(server, ['lock', 'jobs/exit-code', '--', 'sh', '-c', 'echo "$HOLDFAST_LOCK_KEY $HOLDFAST_FENCING_TOKEN"; exit 7']);
    expect(result.code).toBe(7);
    expect(result.stdout.trim()).toMatch(/^jobs\/exit-code \d+$/);
    const ok = await holdfast(server, ['lock', 'jobs/exit-code', '--', 'true']);
    expect(ok.code).toBe(0);
    // Released and the session closed at the end: nothing of either run is left on the server.
    expect((await api.read('jobs/exit-code')).body.held).toBe(false);
    const sessions = (await api.admin(server.operatorToken).listSessions()).body.items as { owner: string }[];
    expect(sessions.filter((s) => s.owner.startsWith('holdfast lock '))).toEqual([]);
  });

  test('CMD gets no Holdfast credentials (issue 24 item 6): it cannot print HOLDFAST_TOKEN, the token file or the server secrets', async () => {
    const tokenFile = path.join(dir, 'cmd-env.token');
    writeFileSync(tokenFile, `${server.operatorToken}\n`, { mode: 0o600 });
    // The token in HOLDFAST_TOKEN (what runbooks export), with the other credential variables set beside it.
    const result = await holdfast(server, ['lock', 'jobs/env', '--', 'sh', '-c', 'env; echo "token=[$HOLDFAST_TOKEN]"'], {
      env: {
        HOLDFAST_TOKEN_FILE: '',
        HOLDFAST_ADMIN_TOKENS_FILE: '/etc/holdfast/tokens.json',
        HOLDFAST_AUDIT_KEY_FILE: '/etc/holdfast/audit.key',
        HOLDFAST_SOME_SECRET: 'secret-value',
        HOLDFAST_URL_EXTRA: 'kept',
      },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('token=[]');
    expect(result.stdout).not.toContain(server.operatorToken);
    const names = result.stdout.split('\n').map((line) => line.split('=', 1)[0]);
    for (const name of ['HOLDFAST_TOKEN', 'HOLDFAST_ADMIN_TOKENS_FILE', 'HOLDFAST_AUDIT_KEY_FILE', 'HOLDFAST_SOME_SECRET']) expect(names).not.toContain(name);
    // What CMD is meant to have is still there.
    for (const name of ['HOLDFAST_LOCK_KEY', 'HOLDFAST_FENCING_TOKEN', 'HOLDFAST_URL', 'HOLDFAST_URL_EXTRA', 'PATH']) expect(names).toContain(name);

    // The same with the token in a file: CMD sees neither the file's name nor its content.
    const fromFile = await holdfast(server, ['lock', 'jobs/env', '--', 'sh', '-c', 'env'], { token: '', env: { HOLDFAST_TOKEN_FILE: tokenFile } });
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(fromFile.stdout).not.toContain(tokenFile);
    expect(fromFile.stdout).not.toContain(server.operatorToken);
  });

  test('not granted within --wait: CMD never runs, exit 3 (and a JSON error under -o json)', async () => {
    const holder = (await api.openSession({ owner: 'someone-else', ttlMillis: 60_000 })).body.sessionId as string;
    expect((await api.acquire('jobs/busy', { sessionId: holder, ttlMillis: 60_000 })).status).toBe(200);
    const marker = path.join(dir, 'busy.ran');
    const result = await holdfast(server, ['-o', 'json', 'lock', 'jobs/busy', '--wait', '400', '--', 'sh', '-c', `touch ${marker}`]);
    expect(result.code).toBe(3);
    expect(existsSync(marker)).toBe(false);
    expect(result.stdout).toBe('');
    expect(JSON.parse(result.stderr.trim().split('\n').at(-1)!)).toEqual({
      error: { code: 'NOT_GRANTED', message: expect.stringContaining('jobs/busy was not granted within 400 ms') },
    });
    await api.closeSession(holder);
  });

  test('a revoke while CMD runs sends CMD SIGTERM and exits 4', async () => {
    const log = path.join(dir, 'revoked.log');
    const job = `trap 'echo "got TERM" >> ${log}; exit 0' TERM; echo started >> ${log}; while :; do sleep 0.05; done`;
    const run = startCli(server, ['lock', 'jobs/revoked', '--ttl', '3000', '--', 'sh', '-c', job]);
    await eventually(async () => lines(log).includes('started'), 30_000);
    const held = (await api.read('jobs/revoked')).body;
    expect(held.held).toBe(true);
    const revoked = await api.admin(server.operatorToken).revoke('jobs/revoked', { reason: 'test: runaway job' });
    expect(revoked.body.outcome).toBe('REVOKED');
    const result = await run.done;
    expect(result.code).toBe(4);
    expect(lines(log)).toEqual(['started', 'got TERM']);
    expect(result.stderr).toContain(`jobs/revoked (fencing token ${held.fencingToken}) was lost`);
  });

  test('a CMD that ignores SIGTERM after the lock is lost gets SIGKILL after --grace; still exit 4', async () => {
    const log = path.join(dir, 'stubborn.log');
    const job = `trap 'echo "ignored TERM" >> ${log}' TERM; echo started >> ${log}; while :; do sleep 0.05; done`;
    const run = startCli(server, ['lock', 'jobs/stubborn', '--ttl', '3000', '--grace', '300', '--', 'sh', '-c', job]);
    await eventually(async () => lines(log).includes('started'), 30_000);
    expect((await api.admin(server.operatorToken).revoke('jobs/stubborn', { reason: 'test: stubborn job' })).body.outcome).toBe('REVOKED');
    const result = await run.done;
    expect(result.code).toBe(4);
    expect(lines(log)).toEqual(['started', 'ignored TERM']);
    expect(result.stderr).toMatch(/SIGTERM, SIGKILL in 300 ms/);
  });

  test('SIGTERM to holdfast goes to CMD; the lock is released and the session closed after CMD exits', async () => {
    const log = path.join(dir, 'forwarded.log');
    const job = `trap 'echo "got TERM" >> ${log}; exit 5' TERM; echo started >> ${log}; while :; do sleep 0.05; done`;
    const run = startCli(server, ['lock', 'jobs/forwarded', '--owner', 'forwarding-test', '--', 'sh', '-c', job]);
    await eventually(async () => lines(log).includes('started'), 30_000);
    expect((await api.read('jobs/forwarded')).body.owner).toBe('forwarding-test');
    run.child.kill('SIGTERM');
    const result = await run.done;
    expect(result.code).toBe(5);
    expect(lines(log)).toEqual(['started', 'got TERM']);
    expect((await api.read('jobs/forwarded')).body.held).toBe(false);
    const sessions = (await api.admin(server.operatorToken).listSessions()).body.items as { owner: string }[];
    expect(sessions.map((s) => s.owner)).not.toContain('forwarding-test');
  });

  test('SIGINT while waiting stops the wait: CMD never runs, exit 130, no session left behind', async () => {
    const holder = (await api.openSession({ owner: 'long-holder', ttlMillis: 60_000 })).body.sessionId as string;
    expect((await api.acquire('jobs/interrupted', { sessionId: holder, ttlMillis: 60_000 })).status).toBe(200);
    const marker = path.join(dir, 'interrupted.ran');
    const run = startCli(server, ['lock', 'jobs/interrupted', '--owner', 'interrupted-waiter', '--', 'sh', '-c', `touch ${marker}`]);
    await eventually(async () => (await api.read('jobs/interrupted')).body.waiterCount >= 1, 30_000);
    run.child.kill('SIGINT');
    const result = await run.done;
    expect(result.code).toBe(130);
    expect(existsSync(marker)).toBe(false);
    const sessions = (await api.admin(server.operatorToken).listSessions()).body.items as { owner: string }[];
    expect(sessions.map((s) => s.owner)).not.toContain('interrupted-waiter');
    await api.closeSession(holder);
  });

  test('a missing COMMAND exits 127; a COMMAND with options needs -- (usage error, exit 2)', async () => {
    const missing = await holdfast(server, ['lock', 'jobs/missing', '--', 'no-such-command-holdfast']);
    expect(missing.code).toBe(127);
    expect(missing.stderr).toMatch(/cannot run no-such-command-holdfast: ENOENT/);
    const usage = await holdfast(server, ['lock', 'jobs/usage', 'ls', '-l']);
    expect(usage.code).toBe(2);
    expect((await api.read('jobs/usage')).body.held).toBe(false);
  });
});
