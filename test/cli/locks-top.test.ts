/** `holdfast locks top` and `holdfast locks ls --sort age`, run as the bin against a real server. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { httpClient } from '../support/http.js';
import { BIN } from '../support/server-process.js';
import { startServer, type TestServer } from '../support/server.js';

const run = promisify(execFile);
let server: TestServer;

async function holdfast(args: string[], token = server.viewerToken) {
  try {
    const { stdout } = await run(process.execPath, [BIN, ...args], {
      env: { ...process.env, HOLDFAST_URL: server.url, HOLDFAST_TOKEN: token, HOLDFAST_DATA_DIR: '/nonexistent' },
    });
    return { code: 0, stdout, stderr: '' };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(async () => {
  server = await startServer({ store: 'embedded' });
  const api = httpClient(server.url);
  const holder = (await api.openSession({ owner: 'top-holder', ttlMillis: 300_000 })).body.sessionId;
  const other = (await api.openSession({ owner: 'top-other', ttlMillis: 300_000 })).body.sessionId;
  // Held (session and lock) well past the CLI runs, which take seconds each on a busy machine.
  await api.acquire('top/hot', { sessionId: holder, ttlMillis: 300_000 });
  await api.acquire('top/cold', { sessionId: holder, ttlMillis: 300_000 });
  for (let i = 0; i < 5; i++) await api.acquire('top/hot', { sessionId: other });
  await api.acquire('top/cold', { sessionId: other });
});
afterAll(async () => {
  await server?.stop();
});

test('locks top prints the most contended keys first, with holder; --limit and --json', async () => {
  const table = await holdfast(['locks', 'top']);
  expect(table.code).toBe(0);
  expect(table.stdout).toMatch(/most contended keys, last 60 s/);
  const rows = table.stdout.split('\n').filter((line) => /top\//.test(line));
  expect(rows[0]).toMatch(/^\s*1\s+top\/hot\s+5\s+0\s+s_\S+\s+top-holder$/);
  expect(rows[1]).toMatch(/^\s*2\s+top\/cold\s+1\s+0\s+s_\S+\s+top-holder$/);
  const json = JSON.parse((await holdfast(['--json', 'locks', 'top', '--limit', '1'])).stdout);
  expect(json.items.map((i: { key: string; contended: number }) => [i.key, i.contended])).toEqual([['top/hot', 5]]);
});

test('locks top refuses a bad limit and a missing token with exit 1', async () => {
  const bad = await holdfast(['locks', 'top', '--limit', '0']);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toMatch(/400 VALIDATION_FAILED/);
  const anonymous = await holdfast(['locks', 'top'], '');
  expect(anonymous.code).toBe(1);
  expect(anonymous.stderr).toMatch(/401 UNAUTHENTICATED/);
});

test('locks ls --sort age lists the oldest grants first', async () => {
  const json = JSON.parse((await holdfast(['--json', 'locks', 'ls', '--sort', 'age'])).stdout);
  const expected = [...json.items].sort((a: any, b: any) => a.grantedAt - b.grantedAt || (a.key < b.key ? -1 : 1)).map((l: any) => l.key);
  expect(json.items.map((l: { key: string }) => l.key)).toEqual(expected);
  expect(json.items.map((l: { key: string }) => l.key).sort()).toEqual(['top/cold', 'top/hot']);
  const refused = await holdfast(['locks', 'ls', '--sort', 'oldest']);
  expect(refused.code).not.toBe(0);
});
