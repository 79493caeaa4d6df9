/**
 * @holdfast/client as a user gets it — it is not on the npm registry, so the
 * READMEs tell users to pack it from a checkout and install the tarball, and
 * this runs those two commands as written (only the directory differs): `npm
 * pack -w client --pack-destination DIR` at the repository root, then `npm
 * install DIR/holdfast-client-<version>.tgz` in an empty project. It then
 * type-checks a CommonJS and an ESM consumer
 * with `tsc --strict` against the package's own declarations, and run both
 * against a real server — the CommonJS one before any optional peer is
 * installed, the ESM one with prom-client and a registry of its own.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const consumerSources = path.join(import.meta.dirname, 'package-consumer');
const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
// Offline-friendly: the tarball's installs come from the npm cache when they are there.
const NPM_INSTALL = ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--save-exact'];

let server: TestServer;
let work: string;
let project: string;
let tarball: string;
let packedFiles: string[];
let packedName: string;
const version = (JSON.parse(readFileSync(path.join(root, 'client/package.json'), 'utf8')) as { version: string }).version;

async function npm(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run('npm', args, { cwd, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

async function typecheck(files: string[]): Promise<{ code: number; output: string }> {
  writeFileSync(
    path.join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        types: ['node'],
        skipLibCheck: false,
        outDir: 'out',
      },
      files,
    }),
  );
  try {
    const { stdout } = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: project, timeout: 120_000 });
    return { code: 0, output: stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, output: failed.stdout };
  }
}

async function node(file: string): Promise<string> {
  const { stdout } = await run(process.execPath, [file], {
    cwd: project,
    env: { ...process.env, HOLDFAST_URL: server.url },
    timeout: 60_000,
  });
  return stdout;
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'holdfast-sdk-package-'));
  project = path.join(work, 'consumer');
  server = await startServer();
  // The README's command, at the repository root; the workspace's `prepack` builds dist/ with tsup first.
  const packed = JSON.parse(await npm(['pack', '-w', 'client', '--pack-destination', work, '--json'], root)) as {
    filename: string;
    files: { path: string }[];
  }[];
  packedName = packed[0]!.filename;
  tarball = path.join(work, packedName);
  packedFiles = packed[0]!.files.map((f) => f.path).sort();
  await run('mkdir', ['-p', project]);
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'sdk-consumer', private: true }));
  for (const file of readdirSync(consumerSources)) copyFileSync(path.join(consumerSources, file), path.join(project, file));
  await npm([...NPM_INSTALL, tarball, '@types/node@20.19.43'], project);
}, 600_000);

afterAll(async () => {
  await server?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('@holdfast/client, packed and installed', () => {
  it('both READMEs give the commands this test runs, with the tarball name npm pack writes', () => {
    expect(packedName).toBe(`holdfast-client-${version}.tgz`);
    for (const readme of ['README.md', 'client/README.md']) {
      const text = readFileSync(path.join(root, readme), 'utf8');
      expect(text, readme).toContain('npm pack -w client --pack-destination /tmp');
      expect(text, readme).toContain(`npm install /tmp/holdfast-client-${version}.tgz`);
      // Not a registry install: nothing tells the user to run what cannot work.
      expect(text, readme).not.toMatch(/^npm install @holdfast\/client/m);
    }
    // What npm records for a tarball install, as the README says: a `file:` path relative to the project.
    const manifest = JSON.parse(readFileSync(path.join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(manifest.dependencies['@holdfast/client']).toBe(`file:${path.relative(project, tarball)}`);
  });

  it('the tarball holds only the SDK build, with no dependency on server code', () => {
    expect(packedFiles).toEqual(['README.md', 'dist/index.cjs', 'dist/index.d.cts', 'dist/index.d.ts', 'dist/index.js', 'package.json']);
    const installed = path.join(project, 'node_modules/@holdfast/client');
    const manifest = JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.dependencies).toBeUndefined();
    expect(Object.keys(manifest.peerDependencies as object).sort()).toEqual(['@opentelemetry/api', 'prom-client']);
    for (const file of ['dist/index.js', 'dist/index.cjs', 'dist/index.d.ts', 'dist/index.d.cts']) {
      const text = readFileSync(path.join(installed, file), 'utf8');
      // contract/ is bundled in: nothing relative (no lock/, exporter/ or contract/ file) is left to load.
      expect(text).not.toMatch(/(from\s*|require\(\s*|import\(\s*)["']\.{1,2}\//);
      expect(text).not.toMatch(/["'](fastify|pg|pino|etcd3|@electric-sql\/pglite)["']/);
    }
  });

  it('tsc --strict type-checks the CommonJS consumer against index.d.cts, and CommonJS runs with no optional peer installed', async () => {
    const checked = await typecheck(['example.cts']);
    expect(checked.output).toBe('');
    expect(checked.code).toBe(0);
    const stdout = await node('out/example.cjs');
    expect(stdout).toMatch(/^cjs: no optional peer; granted package-test:cjs with token \d+$/m);
    expect(stdout).toContain('cjs: released');
    const info = (await fetch(`${server.url}/v1/locks/${encodeURIComponent('package-test:cjs')}`).then((r) => r.json())) as object;
    expect(info).toMatchObject({ held: false });
  }, 120_000);

  it('tsc --strict rejects a wrong type taken from the declarations (the check is real)', async () => {
    const checked = await typecheck(['type-errors.mts']);
    expect(checked.code).not.toBe(0);
    expect(checked.output).toMatch(/type-errors\.mts\(\d+,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/);
  }, 120_000);

  it('with prom-client installed, the ESM consumer type-checks against index.d.ts, runs, and its registry gets the meters', async () => {
    await npm([...NPM_INSTALL, 'prom-client@15.1.3'], project);
    const checked = await typecheck(['example.mts']);
    expect(checked.output).toBe('');
    expect(checked.code).toBe(0);
    const stdout = await node('out/example.mjs');
    expect(stdout).toMatch(/^esm: granted package-test:esm with token \d+$/m);
    expect(stdout).toContain('esm: released');
    expect(stdout).toMatch(/^lock_client_acquire_attempts_count\{outcome="granted"\} 1$/m);
    expect(stdout).toContain('# TYPE lock_session_lost_total counter');
  }, 240_000);
});
