/**
 * Where the CLI's admin token comes from, and where it goes (issue 10, item 9):
 * a file (`--token-file` / HOLDFAST_TOKEN_FILE) or HOLDFAST_TOKEN, never the
 * command line; the embedded store's local operator token only to a literal
 * loopback address whose server proves it wrote the token (issue 24, item 5).
 * The CLI runs as the package's bin against a recording HTTP server that
 * keeps the Authorization header of every request it gets, a fake listener,
 * a relay, and a real embedded server.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { connect, createServer as createNetServer, type AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isLoopbackUrl } from '../../cli/credentials.js';
import { BIN } from '../support/server-process.js';
import { startServer, type TestServer } from '../support/server.js';

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

describe('the local embedded operator token goes only to the server that wrote it (issue 24 item 5)', () => {
  let real: TestServer;
  let dataDir: string;
  let localToken: string;

  beforeAll(async () => {
    // The embedded default: no tokens file, so the server writes the local operator token and its
    // identity key into its data directory (0700; both files 0600).
    dataDir = await mkdtemp(path.join(dir, 'local-'));
    real = await startServer({ store: 'embedded', env: { HOLDFAST_ADMIN_TOKENS_FILE: '', HOLDFAST_DATA_DIR: dataDir } });
    expect(real.running.localTokenFile).toBe(path.join(dataDir, 'admin-tokens.json'));
    localToken = (JSON.parse(await readFile(real.running.localTokenFile!, 'utf8')) as { token: string }[])[0]!.token;
  });
  afterAll(async () => {
    await real?.stop();
  });

  /** A listener that is not the server: keeps every request whole and answers 200 JSON to everything. */
  async function impostor(answer: (path: string, body: string) => unknown = () => ({ items: [], nextCursor: null })) {
    const requests: string[] = [];
    const listener = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        requests.push(`${request.method} ${request.url}\n${JSON.stringify(request.headers)}\n${body}`);
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify(answer(request.url ?? '', body)));
      });
    });
    listener.listen(0, '127.0.0.1');
    await once(listener, 'listening');
    return { url: `http://127.0.0.1:${(listener.address() as AddressInfo).port}`, requests, close: () => listener.close() };
  }

  it('the real server (proved itself) gets it: the CLI acts as local-operator', async () => {
    const status = await holdfast(['-o', 'json', 'status'], { HOLDFAST_DATA_DIR: dataDir, HOLDFAST_URL: real.url });
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ whoami: { name: 'local-operator', role: 'operator' } });
    const ls = await holdfast(['locks', 'ls'], { HOLDFAST_DATA_DIR: dataDir, HOLDFAST_URL: real.url });
    expect(ls.code, ls.stderr).toBe(0);
  });

  it('a fake listener on 127.0.0.1 never receives it, on any path, from any command', async () => {
    const fake = await impostor((route) => (route === '/v1/local/identity' ? { proof: 'x'.repeat(43) } : { items: [], nextCursor: null }));
    try {
      const env = { HOLDFAST_DATA_DIR: dataDir, HOLDFAST_URL: fake.url };
      const results = [
        await holdfast(['status'], env),
        await holdfast(['locks', 'ls'], env),
        await holdfast(['sessions', 'ls'], env),
        await holdfast(['revoke', 'k', '--reason', 'r'], env),
        await holdfast(['lock', 'k', '--wait', '0', '--', 'true'], env),
      ];
      expect(fake.requests.length).toBeGreaterThan(results.length);
      for (const request of fake.requests) expect(request).not.toContain(localToken);
      // It was asked to prove itself (with no credentials), failed, and the CLI said why.
      expect(fake.requests.filter((r) => r.startsWith('POST /v1/local/identity')).length).toBeGreaterThanOrEqual(results.length);
      for (const r of fake.requests) expect(r.toLowerCase()).not.toContain('authorization');
      for (const result of results) expect(result.stdout + result.stderr).not.toContain(localToken);
    } finally {
      fake.close();
    }
  });

  it('nor does a listener that relays the identity question to the real server (the proof names the real port)', async () => {
    let relayed = '';
    const relay = createNetServer((socket) => {
      const upstream = connect(Number(new URL(real.url).port), '127.0.0.1');
      socket.on('data', (chunk) => (relayed += chunk.toString('latin1')));
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    });
    relay.listen(0, '127.0.0.1');
    await once(relay, 'listening');
    try {
      const url = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
      const result = await holdfast(['locks', 'ls'], { HOLDFAST_DATA_DIR: dataDir, HOLDFAST_URL: url });
      expect(relayed).toContain('POST /v1/local/identity');
      expect(relayed).toContain('GET /v1/admin/locks');
      expect(relayed).not.toContain(localToken);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/401 UNAUTHENTICATED/);
      expect(result.stderr).toMatch(/local operator token in .*admin-tokens.json was not sent: the server at .* could not prove it is the server of/);
    } finally {
      relay.close();
    }
  });

  it('withheld from a non-loopback URL (the machine’s own network address): no Authorization header, and the CLI says why', async () => {
    const external = Object.values(networkInterfaces())
      .flat()
      .find((i) => i !== undefined && i.family === 'IPv4' && !i.internal)?.address;
    expect(external, 'this test needs a non-loopback IPv4 interface').toBeDefined();
    const result = await holdfast(['locks', 'ls'], { HOLDFAST_DATA_DIR: dataDir, HOLDFAST_URL: `http://${external}:${port}` });
    expect(seen).toEqual([{ path: '/v1/admin/locks?limit=100', authorization: undefined }]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/was not sent: it is only sent to a literal loopback address .*; for this server set HOLDFAST_TOKEN_FILE/);
    expect(result.stderr + result.stdout).not.toContain(localToken);
  });

  it('names are not addresses: http://localhost and http://evil.localhost get nothing', async () => {
    const result = await holdfast(['locks', 'ls'], { HOLDFAST_DATA_DIR: dataDir, HOLDFAST_URL: `http://localhost:${port}` });
    expect(result.code).toBe(1);
    expect(seen.map((s) => s.authorization)).toEqual([undefined]);
    expect(result.stderr).toMatch(/only sent to a literal loopback address/);
  });

  it('isLoopbackUrl: literal 127/8 and ::1 only; localhost names and everything else no', () => {
    for (const url of ['http://127.0.0.1:7070', 'http://127.8.9.10', 'http://[::1]:7070', 'http://[::ffff:127.0.0.1]/', 'http://127.1:7070']) {
      expect(isLoopbackUrl(url), url).toBe(true);
    }
    for (const url of [
      'http://localhost',
      'http://api.localhost:1',
      'http://evil.localhost:7070',
      'http://10.0.0.1',
      'http://holdfast.internal:7070',
      'http://127.0.0.1.evil.example',
      'http://localhost.evil.example',
      'http://[fd00::2]',
      'http://[::ffff:10.0.0.1]',
      'not a url',
    ]) {
      expect(isLoopbackUrl(url), url).toBe(false);
    }
  });
});
