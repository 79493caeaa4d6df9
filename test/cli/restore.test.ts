/**
 * Issue 25, "restore never re-issues a token", end to end with the real `holdfast` bin:
 * - embedded: `holdfast backup`, 100 more grants, `holdfast restore`, grants again: every new token
 *   is above all 100; backup and restore refuse while a server holds the directory;
 * - PostgreSQL: pg_dump, 100 more grants, the database dropped, created and restored with
 *   pg_restore, the server started: writes answer 503 with the pinned body naming the command,
 *   reads are served; `holdfast tokens advance`; grants again (same server, no restart): every new
 *   token is above all 100;
 * - etcd: `holdfast tokens advance` refuses, naming the restore recipe.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { STORE_RESTORED_MESSAGE } from '../../lock/errors.js';
import { sharedPostgres } from '../support/server.js';
import { spawnServer, type ServerProcess } from '../support/server-process.js';
import { holdfast } from './run-cli.js';

const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
const work = mkdtempSync(path.join(tmpdir(), 'holdfast-restore-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** No server answers CLI requests here: the commands under test open the store directly. */
const noServer = { url: 'http://127.0.0.1:9', operatorToken: 'unused' };

async function post(url: string, body: unknown, token?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** `n` grants through L1 and L4 on keys of their own: their fencing tokens. */
async function grant(server: ServerProcess, n: number, label: string): Promise<bigint[]> {
  const session = await post(`${server.url}/v1/sessions`, { owner: `restore-${label}`, ttlMillis: 60_000 });
  expect(session.status).toBe(201);
  const tokens: bigint[] = [];
  for (let i = 0; i < n; i++) {
    const key = encodeURIComponent(`restore/${label}/${i}`);
    const acquired = await post(
      `${server.url}/v1/locks/${key}/acquire`,
      { sessionId: session.body.sessionId, ttlMillis: 60_000 },
      String(session.body.sessionToken),
    );
    expect(acquired.status).toBe(200);
    tokens.push(BigInt(String(acquired.body.fencingToken)));
  }
  return tokens;
}

// The time limits below only bound a failure: each test spawns real servers and CLI processes (tsx).
const max = (values: bigint[]) => values.reduce((a, b) => (a > b ? a : b));
const min = (values: bigint[]) => values.reduce((a, b) => (a < b ? a : b));

async function stop(server: ServerProcess): Promise<void> {
  server.child.kill('SIGTERM');
  expect(await server.exited).toBe(0);
}

describe('embedded: holdfast backup / restore', () => {
  test('after a restore every new token is above all 100 granted since the backup; both refuse while a server holds the directory', async () => {
    const dataDir = path.join(work, 'embedded');
    const env = { HOLDFAST_DATA_DIR: dataDir };
    const cli = (args: string[]) => holdfast(noServer, ['-o', 'json', ...args], { env });
    let server = await spawnServer(env);
    const beforeBackup = await grant(server, 5, 'before');

    const whileServing = await cli(['backup', path.join(work, 'refused.tar')]);
    expect(whileServing.code).toBe(1);
    expect(whileServing.stderr).toContain('in use by another Holdfast server');
    await stop(server);

    const backup = path.join(work, 'embedded.tar');
    const backedUp = await cli(['backup', backup]);
    expect(backedUp.code, backedUp.stderr).toBe(0);
    expect(JSON.parse(backedUp.stdout)).toMatchObject({ file: backup, bytes: expect.any(Number) });

    server = await spawnServer(env);
    const sinceBackup = await grant(server, 100, 'since');
    expect(min(sinceBackup)).toBeGreaterThan(max(beforeBackup));
    const restoreWhileServing = await cli(['restore', backup]);
    expect(restoreWhileServing.code).toBe(1);
    expect(restoreWhileServing.stderr).toContain('in use by another Holdfast server');
    await stop(server);

    const restored = await cli(['restore', backup, '--reason', 'restore test']);
    expect(restored.code, restored.stderr).toBe(0);
    const answer = JSON.parse(restored.stdout) as { movedAside: string; floor: string; auditId: string };
    expect(answer.movedAside).toContain('pgdata.before-restore-');
    expect(BigInt(answer.floor)).toBeGreaterThan(max(sinceBackup));

    server = await spawnServer(env);
    try {
      // The backup's grant is back (its session too): the restore is the backup's state.
      const held = await fetch(`${server.url}/v1/locks/${encodeURIComponent('restore/before/0')}`);
      expect(held.status).toBe(200);
      const after = await grant(server, 20, 'after');
      expect(min(after)).toBeGreaterThan(max([...beforeBackup, ...sinceBackup]));
    } finally {
      await stop(server);
    }
  }, 900_000);

  test('backup of a directory with no store is refused, naming the directory', async () => {
    const empty = path.join(work, 'empty');
    const result = await holdfast(noServer, ['backup', path.join(work, 'none.tar')], { env: { HOLDFAST_DATA_DIR: empty } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`no embedded store in ${empty}`);
  }, 120_000);
});

describe('PostgreSQL: pg_dump / pg_restore + holdfast tokens advance', () => {
  test('a restored database refuses writes naming the command and serves reads; after tokens advance every new token is above all 100', async () => {
    const cluster = await sharedPostgres();
    const databaseUrl = await cluster.createDatabase();
    const database = new URL(databaseUrl).pathname.slice(1);
    const env = { HOLDFAST_STORE: 'postgres', DATABASE_URL: databaseUrl };
    let server = await spawnServer(env);
    const beforeBackup = await grant(server, 5, 'pg-before');
    const dump = path.join(work, 'pg.dump');
    const dumped = spawnSync(path.join(PG_BIN, 'pg_dump'), ['-Fc', '-f', dump, '-d', databaseUrl], { encoding: 'utf8' });
    expect(dumped.status, dumped.stderr).toBe(0);
    const sinceBackup = await grant(server, 100, 'pg-since');
    await stop(server);

    await cluster.sql(cluster.url, `DROP DATABASE ${database} WITH (FORCE)`);
    await cluster.sql(cluster.url, `CREATE DATABASE ${database}`);
    const restored = spawnSync(path.join(PG_BIN, 'pg_restore'), ['--no-owner', '-d', databaseUrl, dump], { encoding: 'utf8' });
    expect(restored.status, restored.stderr).toBe(0);

    server = await spawnServer(env);
    try {
      const refused = await post(`${server.url}/v1/sessions`, { owner: 'after-restore' });
      expect(refused).toEqual({ status: 503, body: { error: { code: 'NOT_LEADER', message: STORE_RESTORED_MESSAGE, retryable: true } } });
      // Reads are served: the backup's grant is there.
      const held = await fetch(`${server.url}/v1/locks/${encodeURIComponent('restore/pg-before/0')}`);
      expect(held.status).toBe(200);
      expect(((await held.json()) as { fencingToken: string }).fencingToken).toBe(String(beforeBackup[0]));
      expect(server.output()).toContain('"event":"store_restored"');

      const advanced = await holdfast(noServer, ['-o', 'json', 'tokens', 'advance', '--reason', 'restore test'], { env });
      expect(advanced.code, advanced.stderr).toBe(0);
      expect(JSON.parse(advanced.stdout)).toMatchObject({ backend: 'postgres', auditId: expect.any(String) });

      // The same server, no restart: its next write sees the advance.
      const after = await grant(server, 20, 'pg-after');
      expect(min(after)).toBeGreaterThan(max([...beforeBackup, ...sinceBackup]));
      expect(server.output()).toContain('"event":"store_advanced"');
    } finally {
      await stop(server);
    }
  }, 900_000);
});

describe('etcd: holdfast tokens advance', () => {
  test('refuses, naming the restore that raises etcd revisions', async () => {
    const result = await holdfast(noServer, ['-o', 'json', 'tokens', 'advance'], {
      env: { HOLDFAST_STORE: 'etcd', ETCD_ENDPOINTS: 'http://127.0.0.1:9' },
    });
    expect(result.code).toBe(1);
    const { error } = JSON.parse(result.stderr) as { error: { code: string; message: string } };
    expect(error.code).toBe('NOT_SUPPORTED');
    expect(error.message).toContain('--bump-revision');
  }, 120_000);
});
