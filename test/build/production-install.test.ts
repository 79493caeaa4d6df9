/**
 * The compiled server in a production install, as an operator would deploy it:
 * `tsc -p tsconfig.build.json` emits dist/, a fresh directory gets only the
 * package manifests, bin/ and dist/ (no TypeScript sources), `npm ci
 * --omit=dev` installs the runtime dependencies, and `holdfast server` runs
 * on plain node — no tsx, no Next.js, no TypeScript there to fall back on.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/ports.js';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const OPERATOR_TOKEN = 'op-production-install-test-token-0123456789';

/** A production process environment: nothing of this test runner's (no tsx loader, no NODE_OPTIONS). */
function productionEnv(vars: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', NODE_ENV: 'production', ...vars };
}

let work: string;
let app: string;
let server: ChildProcess | undefined;
let serverOutput = '';
let url: string;
let exited: Promise<number | string>;

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'holdfast-prod-install-'));
  app = path.join(work, 'app');
  mkdirSync(path.join(app, 'client'), { recursive: true });
  await run(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', path.join(app, 'dist')], {
    cwd: root,
    timeout: 300_000,
  });
  for (const file of ['package.json', 'package-lock.json', 'client/package.json']) cpSync(path.join(root, file), path.join(app, file));
  cpSync(path.join(root, 'bin'), path.join(app, 'bin'), { recursive: true });
  await run('npm', ['ci', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], {
    cwd: app,
    timeout: 480_000,
    maxBuffer: 16 * 1024 * 1024,
  });

  writeFileSync(path.join(work, 'tokens.json'), JSON.stringify([{ name: 'ops', token: OPERATOR_TOKEN, role: 'operator' }]), { mode: 0o600 });
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['bin/holdfast.js', 'server'], {
    cwd: app,
    env: productionEnv({
      HOLDFAST_PORT: String(port),
      HOLDFAST_DATA_DIR: path.join(work, 'data'),
      HOLDFAST_ADMIN_TOKENS_FILE: path.join(work, 'tokens.json'),
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server = child;
  child.stdout!.on('data', (chunk) => (serverOutput += chunk));
  child.stderr!.on('data', (chunk) => (serverOutput += chunk));
  exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the compiled server exited early:\n${serverOutput}`);
    const ready = await fetch(`${url}/readyz`).then((r) => r.ok, () => false);
    if (ready) break;
    if (Date.now() > deadline) throw new Error(`the compiled server did not become ready:\n${serverOutput}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}, 900_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    server.kill('SIGKILL');
    await exited;
  }
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('production install (npm ci --omit=dev) of the compiled server', () => {
  it('installs the server runtime only: no Next.js, React, tsx, TypeScript or test tools', () => {
    for (const runtime of [
      'fastify',
      'pg',
      '@electric-sql/pglite',
      'etcd3',
      'pino',
      'prom-client',
      'commander',
      'zod',
      '@opentelemetry/sdk-node',
      'typebox',
      '@fastify/swagger',
      '@fastify/type-provider-typebox',
    ]) {
      expect(existsSync(path.join(app, 'node_modules', runtime, 'package.json')), runtime).toBe(true);
    }
    for (const devOnly of ['next', 'react', 'tsx', 'typescript', 'vitest', 'tsup', 'dependency-cruiser', '@grafana/grafana-foundation-sdk', '@redocly/cli']) {
      expect(existsSync(path.join(app, 'node_modules', devOnly)), devOnly).toBe(false);
    }
    expect(existsSync(path.join(app, 'cli/main.ts'))).toBe(false);
  });

  it('`holdfast server` serves /healthz and /readyz from dist/ on plain node', async () => {
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    expect(serverOutput).toContain(`holdfast: serving on ${url} (store: embedded)`);
  });

  it('the compiled CLI operates it: a held lock shows in `locks ls --json`', async () => {
    const session = (await fetch(`${url}/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ owner: 'prod-install-test' }),
    }).then((r) => r.json())) as { sessionId: string; sessionToken: string };
    const grant = await fetch(`${url}/v1/locks/prod%2Fkey/acquire`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${session.sessionToken}` },
      body: JSON.stringify({ sessionId: session.sessionId, ttlMillis: 30_000 }),
    });
    expect(grant.status).toBe(200);
    const { stdout } = await run(process.execPath, ['bin/holdfast.js', 'locks', 'ls', '--json'], {
      cwd: app,
      env: productionEnv({ HOLDFAST_URL: url, HOLDFAST_TOKEN: OPERATOR_TOKEN }),
      timeout: 30_000,
    });
    const page = JSON.parse(stdout) as { items: { key: string; owner: string }[] };
    expect(page.items).toEqual([expect.objectContaining({ key: 'prod/key', owner: 'prod-install-test' })]);
  });

  it('serves GET /openapi.json, the committed docs/openapi.json, from the compiled route schemas', async () => {
    const response = await fetch(`${url}/openapi.json`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe(readFileSync(path.join(root, 'docs/openapi.json'), 'utf8'));
  });

  it('the compiled CLI runs a command under a lock (the SDK is compiled in) and knows its version', async () => {
    const env = productionEnv({ HOLDFAST_URL: url, HOLDFAST_TOKEN: OPERATOR_TOKEN });
    const locked = await run(process.execPath, ['bin/holdfast.js', 'lock', 'prod/cli-lock', '--', 'sh', '-c', 'echo "$HOLDFAST_LOCK_KEY $HOLDFAST_FENCING_TOKEN"'], {
      cwd: app,
      env,
      timeout: 30_000,
    });
    expect(locked.stdout.trim()).toMatch(/^prod\/cli-lock \d+$/);
    const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
    const shown = JSON.parse((await run(process.execPath, ['bin/holdfast.js', 'version', '-o', 'json'], { cwd: app, env, timeout: 30_000 })).stdout);
    expect(shown).toMatchObject({ cli: { version }, server: { reachable: true, version } });
  });

  it('stops cleanly on SIGTERM (exit 0)', async () => {
    server!.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
