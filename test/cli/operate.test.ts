/**
 * The on-call CLI beyond `holdfast lock`, against a real server: locks ls
 * filters and --sort, sessions show, audit --action/--actor, -o wide|json and
 * the JSON error shape, exit 2 for usage errors, status, version, a path prefix
 * in HOLDFAST_URL, and shell completion generated from the command tree.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { LockInfo } from '../../contract/records.js';
import { eventually, httpClient } from '../support/http.js';
import { startPrefixProxy, type PrefixProxy } from '../support/prefix-proxy.js';
import { sharedPostgres, startServer, type TestServer } from '../support/server.js';
import { holdfast } from './run-cli.js';

const PACKAGE_VERSION = (JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string }).version;
const keysOf = (stdout: string) => (JSON.parse(stdout) as { items: LockInfo[] }).items.map((l) => l.key);

describe('holdfast CLI for on-call', () => {
  let server: TestServer;
  let api: ReturnType<typeof httpClient>;
  let payouts: string;
  let reports: string;
  let proxy: PrefixProxy;
  /** A viewer scoped to payouts/ (issue 26): `status` shows its scope. */
  const payoutsViewer = `payouts-viewer-${randomBytes(16).toString('hex')}`;

  beforeAll(async () => {
    server = await startServer({ store: 'postgres', tokens: [{ name: 'payouts-viewer', token: payoutsViewer, role: 'viewer', prefixes: ['payouts/'] }] });
    api = httpClient(server.url);
    payouts = (await api.openSession({ owner: 'payout-worker-7', ttlMillis: 300_000 })).body.sessionId;
    reports = (await api.openSession({ owner: 'report-runner', ttlMillis: 300_000 })).body.sessionId;
    for (const key of ['payouts/eu', 'payouts/us']) await api.acquire(key, { sessionId: payouts, ttlMillis: 600_000 });
    await api.acquire('reports/daily', { sessionId: reports, ttlMillis: 600_000 });
    await api.acquire('reports/weekly', { sessionId: reports, ttlMillis: 600_000 });
    // Held for two hours and for ten minutes: backdate the grants in the store.
    const cluster = await sharedPostgres();
    await cluster.sql(server.databaseUrl!, 'UPDATE holdfast_locks SET granted_at = granted_at - 7200000 WHERE key = $1', ['payouts/us']);
    await cluster.sql(server.databaseUrl!, 'UPDATE holdfast_locks SET granted_at = granted_at - 600000 WHERE key = $1', ['reports/weekly']);
    proxy = await startPrefixProxy(server.url, '/holdfast');
  });
  afterAll(async () => {
    await proxy?.close();
    await server?.stop();
  });

  test('locks ls --owner and --session filter; --older-than keeps locks held at least that long', async () => {
    expect(keysOf((await holdfast(server, ['-o', 'json', 'locks', 'ls', '--owner', 'report-runner'])).stdout)).toEqual(['reports/daily', 'reports/weekly']);
    expect(keysOf((await holdfast(server, ['-o', 'json', 'locks', 'ls', '--session', payouts])).stdout)).toEqual(['payouts/eu', 'payouts/us']);
    expect(keysOf((await holdfast(server, ['-o', 'json', 'locks', 'ls', '--older-than', '5m'])).stdout)).toEqual(['payouts/us', 'reports/weekly']);
    expect(keysOf((await holdfast(server, ['-o', 'json', 'locks', 'ls', '--older-than', '1h'])).stdout)).toEqual(['payouts/us']);
    expect(keysOf((await holdfast(server, ['-o', 'json', 'locks', 'ls', '--owner', 'report-runner', '--older-than', '1h'])).stdout)).toEqual([]);
    const table = await holdfast(server, ['locks', 'ls', '--older-than', '1h']);
    expect(table.stdout).toMatch(/payouts\/us\s+payout-worker-7\s+\S+\s+\d+\s+2h ago\s+in \S+\s+0/);
    expect(table.stdout).not.toContain('payouts/eu');
  });

  test('locks ls --sort age (oldest first), key, and waiters (most first); --limit cuts the sorted list', async () => {
    expect(keysOf((await holdfast(server, ['--json', 'locks', 'ls', '--sort', 'age'])).stdout)).toEqual([
      'payouts/us',
      'reports/weekly',
      'payouts/eu',
      'reports/daily',
    ]);
    expect(keysOf((await holdfast(server, ['--json', 'locks', 'ls', '--sort', 'age', '--limit', '1'])).stdout)).toEqual(['payouts/us']);
    expect(keysOf((await holdfast(server, ['--json', 'locks', 'ls', '--sort', 'key'])).stdout)).toEqual([
      'payouts/eu',
      'payouts/us',
      'reports/daily',
      'reports/weekly',
    ]);
    // A third session waits on the server for reports/daily.
    const waiter = (await api.openSession({ owner: 'waiter', ttlMillis: 60_000 })).body.sessionId;
    const waiting = api.acquire('reports/daily', { sessionId: waiter, ttlMillis: 5_000, waitMillis: 20_000 });
    await eventually(async () => (await api.read('reports/daily')).body.waiterCount >= 1);
    const byWaiters = keysOf((await holdfast(server, ['--json', 'locks', 'ls', '--sort', 'waiters'])).stdout);
    expect(byWaiters).toEqual(['reports/daily', 'payouts/us', 'reports/weekly', 'payouts/eu']);
    await api.closeSession(waiter);
    await waiting;
  });

  test('-o wide adds columns; --json is -o json', async () => {
    const table = await holdfast(server, ['locks', 'ls']);
    const wide = await holdfast(server, ['-o', 'wide', 'locks', 'ls']);
    expect(table.stdout).not.toMatch(/GRANTED AT/);
    expect(wide.stdout).toMatch(/WAITERS\s+GRANTED AT\s+EXPIRES AT/);
    expect(wide.stdout).toMatch(/payouts\/us .* \d{4}-\d\d-\d\dT/);
    const json = JSON.parse((await holdfast(server, ['-o', 'json', 'locks', 'ls'])).stdout);
    const alias = JSON.parse((await holdfast(server, ['locks', 'ls', '--json'])).stdout);
    expect(alias.items.map((l: LockInfo) => l.key)).toEqual(json.items.map((l: LockInfo) => l.key));
  });

  test('sessions show: the session and the locks it holds; an unknown one exits 1', async () => {
    const shown = await holdfast(server, ['sessions', 'show', reports]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/owner\s+report-runner/);
    expect(shown.stdout).toMatch(/reports\/daily\s+\d+/);
    const json = JSON.parse((await holdfast(server, ['-o', 'json', 'sessions', 'show', payouts])).stdout);
    expect(json).toMatchObject({ sessionId: payouts, owner: 'payout-worker-7', lockCount: 2 });
    expect(json.locks.map((l: LockInfo) => l.key)).toEqual(['payouts/eu', 'payouts/us']);
    expect(JSON.stringify(json)).not.toContain(api.sessionToken(payouts)!);
    const unknown = await holdfast(server, ['-o', 'json', 'sessions', 'show', 'no-such-session']);
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stderr).error.code).toBe('SESSION_NOT_FOUND');
  });

  test('audit --action and --actor filter the trail', async () => {
    await api.admin(server.operatorToken).revoke('payouts/eu', { reason: 'audit filter test' });
    const victim = (await api.openSession({ owner: 'doomed', ttlMillis: 60_000 })).body.sessionId;
    await api.admin(server.operatorToken).kill(victim, { reason: 'audit filter test' });
    const kills = JSON.parse((await holdfast(server, ['-o', 'json', 'audit', '--action', 'session.kill'])).stdout).items;
    expect(kills.length).toBeGreaterThan(0);
    expect(kills.every((e: { action: string }) => e.action === 'session.kill')).toBe(true);
    expect(kills.map((e: { target: string }) => e.target)).toContain(victim);
    const revokes = JSON.parse((await holdfast(server, ['-o', 'json', 'audit', '--action', 'lock.revoke', '--actor', 'test-operator'])).stdout).items;
    expect(revokes.map((e: { target: string }) => e.target)).toContain('payouts/eu');
    expect(revokes.every((e: { action: string; actor: string }) => e.action === 'lock.revoke' && e.actor === 'test-operator')).toBe(true);
    expect(JSON.parse((await holdfast(server, ['-o', 'json', 'audit', '--actor', 'nobody'])).stdout).items).toEqual([]);
    expect((await holdfast(server, ['audit', '--action', 'lock.steal'])).code).toBe(2);
  });

  test('-o json errors: one {"error":{code,message}} line on stderr, nothing on stdout', async () => {
    const refused = await holdfast(server, ['-o', 'json', 'revoke', 'payouts/us', '--reason', 'x'], { token: server.viewerToken });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(JSON.parse(refused.stderr)).toEqual({ error: { code: 'FORBIDDEN', status: 403, message: expect.stringMatching(/^403 FORBIDDEN: /) } });
    const unreachable = await holdfast({ ...server, url: 'http://127.0.0.1:1' }, ['--json', 'locks', 'ls']);
    expect(unreachable.code).toBe(1);
    expect(JSON.parse(unreachable.stderr).error.code).toBe('UNREACHABLE');
    const usage = await holdfast(server, ['-o', 'json', 'locks', 'ls', '--sort', 'size']);
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stderr)).toEqual({ error: { code: 'USAGE', message: expect.stringContaining('--sort') } });
  });

  test('usage errors exit 2: unknown command or option, bad or missing values', async () => {
    const cases = [
      ['lcoks', 'ls'],
      ['locks', 'ls', '--frobnicate'],
      ['locks', 'ls', '--older-than', 'ten minutes'],
      ['locks', 'ls', '--sort', 'age', '--cursor', 'abc'],
      ['revoke', 'payouts/us'],
      ['lock', 'jobs/x', '--wait', 'soon', '--', 'true'],
      ['-o', 'yaml', 'locks', 'ls'],
      ['completion', 'fish'],
      [],
    ];
    const results = await Promise.all(cases.map((args) => holdfast(server, args)));
    cases.forEach((args, i) => {
      expect(results[i]!.code, args.join(' ')).toBe(2);
      expect(results[i]!.stderr, args.join(' ')).not.toBe('');
    });
    expect((await holdfast(server, ['locks', 'ls', '--help'])).code).toBe(0);
  });

  test('status: server, reachable and ready, store, whoami; unreachable exits 1', async () => {
    const status = JSON.parse((await holdfast(server, ['-o', 'json', 'status'])).stdout);
    expect(status).toEqual({ url: server.url, reachable: true, ready: true, backend: 'postgres', whoami: { name: 'test-operator', role: 'operator' }, problems: [] });
    const table = await holdfast(server, ['status'], { token: server.viewerToken });
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/store\s+postgres/);
    expect(table.stdout).toMatch(/whoami\s+test-viewer \(viewer\)/);
    expect(table.stdout).toMatch(/scope\s+every key \(unscoped\)/);
    const scoped = await holdfast(server, ['status'], { token: payoutsViewer });
    expect(scoped.stdout).toMatch(/whoami\s+payouts-viewer \(viewer\)/);
    expect(scoped.stdout).toMatch(/scope\s+keys under "payouts\/"/);
    expect(JSON.parse((await holdfast(server, ['-o', 'json', 'status'], { token: payoutsViewer })).stdout).whoami).toEqual({
      name: 'payouts-viewer',
      role: 'viewer',
      prefixes: ['payouts/'],
    });
    const down = await holdfast({ ...server, url: 'http://127.0.0.1:1' }, ['-o', 'json', 'status']);
    expect(down.code).toBe(1);
    expect(JSON.parse(down.stdout)).toMatchObject({ reachable: false, ready: false });
  });

  test("version: the CLI's and the server's (holdfast_build_info)", async () => {
    const version = JSON.parse((await holdfast(server, ['-o', 'json', 'version'])).stdout);
    expect(version.cli).toEqual({ version: PACKAGE_VERSION, nodeVersion: process.version });
    expect(version.server).toMatchObject({ url: server.url, reachable: true, version: PACKAGE_VERSION });
    const offline = await holdfast({ ...server, url: 'http://127.0.0.1:1' }, ['version']);
    expect(offline.code).toBe(0);
    expect(offline.stdout).toMatch(new RegExp(`cli\\s+${PACKAGE_VERSION.replace(/\./g, '\\.')}`));
    expect(offline.stdout).toMatch(/server\s+unreachable/);
  });

  test('a path prefix in HOLDFAST_URL is kept (admin calls and holdfast lock)', async () => {
    const behind = { ...server, url: proxy.url };
    const listed = await holdfast(behind, ['-o', 'json', 'locks', 'ls', '--prefix', 'reports/']);
    expect(listed.code).toBe(0);
    expect(keysOf(listed.stdout)).toEqual(['reports/daily', 'reports/weekly']);
    expect(JSON.parse((await holdfast(behind, ['-o', 'json', 'status'])).stdout)).toMatchObject({ ready: true, whoami: { name: 'test-operator' } });
    const locked = await holdfast(behind, ['lock', 'jobs/behind-proxy', '--', 'sh', '-c', 'echo "$HOLDFAST_FENCING_TOKEN"']);
    expect(locked.code).toBe(0);
    expect(locked.stdout.trim()).toMatch(/^\d+$/);
  });

  test('completion bash|zsh: generated from the command tree; bash completes commands, flags and choices', async () => {
    const bash = await holdfast(server, ['completion', 'bash']);
    const zsh = await holdfast(server, ['completion', 'zsh']);
    for (const script of [bash.stdout, zsh.stdout]) {
      for (const word of ['lock', 'locks', 'elect', 'observe', '--value', 'sessions', 'audit', 'status', 'version', 'completion', '--older-than', 'waiters']) expect(script).toContain(word);
    }
    expect(zsh.stdout.startsWith('#compdef holdfast')).toBe(true);
    const complete = (line: string) => {
      const words = line.split(' ');
      const script = `${bash.stdout}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _holdfast; echo "\${COMPREPLY[*]}"`;
      const result = spawnSync('bash', ['-c', script], { encoding: 'utf8' });
      expect(result.stderr).toBe('');
      return result.stdout.trim();
    };
    expect(complete('holdfast lo')).toBe('lock locks');
    expect(complete('holdfast locks ')).toBe('ls show top');
    expect(complete('holdfast locks ls --sort ')).toBe('age waiters key');
    expect(complete('holdfast -o ')).toBe('table wide json');
    expect(complete('holdfast audit --ac')).toBe('--actor --action');
    expect(complete('holdfast lock jobs/x -- ')).toBe('');
    expect(complete('holdfast el')).toBe('elect');
    expect(complete('holdfast elect --v')).toBe('--value');
    expect(complete('holdfast elect jobs/leader -- ')).toBe('');
  });
});
