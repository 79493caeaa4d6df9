/**
 * Where the CLI's admin token comes from, and where it goes (issue 10, item 9):
 * a file (`--token-file` / HOLDFAST_TOKEN_FILE) or HOLDFAST_TOKEN, never the
 * command line; the embedded store's local operator token only to loopback
 * URLs. The CLI runs as the package's bin against a recording HTTP server that
 * keeps the Authorization header of every request it gets.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isLoopbackUrl } from '../../cli/credentials.js';
import { BIN } from '../support/server-process.js';

const run = promisify(execFile);

interface Seen {
  path: string;
  authorization: string | undefined;
}

let server: Server;
let port: number;
let dir: string;
const seen: Seen[] = [];
/** The recording server accepts exactly this bearer token; anything else is 401. */
const ACCEPTED = 'op-accepted-token-0123456789abcdef';

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'holdfast-cli-cred-'));
  server = createServer((request, response) => {
    seen.push({ path: request.url ?? '', authorization: request.headers.authorization });
    response.setHeader('content-type', 'application/json');
    if (request.headers.authorization !== `Bearer ${ACCEPTED}`) {
      response.statusCode = 401;
      response.end(JSON.stringify({ error: { code: 'UNAUTHENTICATED', message: 'missing or unknown admin token', retryable: false } }));
      return;
    }
    response.end(JSON.stringify({ items: [], nextCursor: null }));
  });
  // All interfaces: the non-loopback test reaches it through the machine's own address.
  server.listen(0, '0.0.0.0');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server?.close();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  seen.length = 0;
});

async function holdfast(args: string[], env: Record<string, string>) {
  const base = { ...process.env };
  delete base.HOLDFAST_TOKEN;
  delete base.HOLDFAST_TOKEN_FILE;
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], {
      env: { ...base, HOLDFAST_DATA_DIR: '/nonexistent', HOLDFAST_URL: `http://127.0.0.1:${port}`, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

async function tokenFile(name: string, content: string): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, content, { mode: 0o600 });
  return file;
}

describe('CLI admin token sources', () => {
  it('HOLDFAST_TOKEN_FILE: the first line of the file is the bearer token', async () => {
    const file = await tokenFile('env-file', `${ACCEPTED}\n# a comment line is ignored\n`);
    const result = await holdfast(['locks', 'ls'], { HOLDFAST_TOKEN_FILE: file });
    expect(result.code).toBe(0);
    expect(seen).toEqual([{ path: '/v1/admin/locks?limit=100', authorization: `Bearer ${ACCEPTED}` }]);
  });

  it('--token-file FILE works the same and wins over HOLDFAST_TOKEN', async () => {
    const file = await tokenFile('flag-file', `  ${ACCEPTED}  \n`);
    const result = await holdfast(['--token-file', file, 'locks', 'ls'], { HOLDFAST_TOKEN: 'not-this-one' });
    expect(result.code).toBe(0);
    expect(seen.map((s) => s.authorization)).toEqual([`Bearer ${ACCEPTED}`]);
  });

  it('HOLDFAST_TOKEN still works', async () => {
    const result = await holdfast(['locks', 'ls'], { HOLDFAST_TOKEN: ACCEPTED });
    expect(result.code).toBe(0);
    expect(seen.map((s) => s.authorization)).toEqual([`Bearer ${ACCEPTED}`]);
  });

  it('--token VALUE is refused before anything is sent, and the value is not echoed', async () => {
    const result = await holdfast(['--token', ACCEPTED, 'locks', 'ls'], {});
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/--token is no longer accepted.*ps.*--token-file/s);
    expect(result.stderr + result.stdout).not.toContain(ACCEPTED);
    expect(seen).toEqual([]);
  });

  it('a missing or empty token file is a clear error, nothing sent', async () => {
    const missing = await holdfast(['locks', 'ls'], { HOLDFAST_TOKEN_FILE: path.join(dir, 'nope') });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/cannot read the token file .*nope \(ENOENT\)/);
    const empty = await holdfast(['locks', 'ls'], { HOLDFAST_TOKEN_FILE: await tokenFile('empty', '\n') });
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/is empty/);
    expect(seen).toEqual([]);
  });

  it('a refused token is reported without printing it', async () => {
    const wrong = 'op-wrong-token-fedcba9876543210';
    const result = await holdfast(['locks', 'ls'], { HOLDFAST_TOKEN_FILE: await tokenFile('wrong', wrong) });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/401 UNAUTHENTICATED/);
    expect(result.stderr + result.stdout).not.toContain(wrong);
  });
});

describe('the local embedded operator token goes to loopback URLs only', () => {
  async function dataDirWithLocalToken(): Promise<string> {
    const dataDir = await mkdtemp(path.join(dir, 'data-'));
    await writeFile(
      path.join(dataDir, 'admin-tokens.json'),
      JSON.stringify([{ name: 'local-operator', token: ACCEPTED, role: 'operator' }]),
      { mode: 0o600 },
    );
    return dataDir;
  }

  it('sent to http://127.0.0.1 and http://localhost', async () => {
    const dataDir = await dataDirWithLocalToken();
    for (const host of ['127.0.0.1', 'localhost']) {
      const result = await holdfast(['locks', 'ls'], { HOLDFAST_DATA_DIR: dataDir, HOLDFAST_URL: `http://${host}:${port}` });
      expect(result.code, result.stderr).toBe(0);
    }
    expect(seen.map((s) => s.authorization)).toEqual([`Bearer ${ACCEPTED}`, `Bearer ${ACCEPTED}`]);
  });

  it('withheld from a non-loopback URL (the machine’s own network address): no Authorization header, and the CLI says why', async () => {
    const external = Object.values(networkInterfaces())
      .flat()
      .find((i) => i !== undefined && i.family === 'IPv4' && !i.internal)?.address;
    expect(external, 'this test needs a non-loopback IPv4 interface').toBeDefined();
    const dataDir = await dataDirWithLocalToken();
    const result = await holdfast(['locks', 'ls'], { HOLDFAST_DATA_DIR: dataDir, HOLDFAST_URL: `http://${external}:${port}` });
    expect(seen).toEqual([{ path: '/v1/admin/locks?limit=100', authorization: undefined }]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/only sent to loopback URLs; for this server set HOLDFAST_TOKEN_FILE/);
    expect(result.stderr + result.stdout).not.toContain(ACCEPTED);
  });

  it('isLoopbackUrl: 127/8, ::1, localhost yes; anything else no', () => {
    for (const url of ['http://127.0.0.1:7070', 'http://127.8.9.10', 'http://[::1]:7070', 'http://localhost', 'http://api.localhost:1', 'http://[::ffff:127.0.0.1]/']) {
      expect(isLoopbackUrl(url), url).toBe(true);
    }
    for (const url of ['http://10.0.0.1', 'http://holdfast.internal:7070', 'http://127.0.0.1.evil.example', 'http://localhost.evil.example', 'http://[fd00::2]', 'not a url']) {
      expect(isLoopbackUrl(url), url).toBe(false);
    }
  });
});
