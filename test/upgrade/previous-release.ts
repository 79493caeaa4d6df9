/**
 * The previous release, built from git history as its operators deployed it: the commit's own tree
 * (`git archive`, so no worktree is left registered), its own lockfile (`npm ci`), its own TypeScript
 * compiling its own `tsconfig.build.json` to dist/ (the server part of its `npm run build`; the SDK's
 * tsup bundle is not what a server runs), then pruned to a production install (`npm prune --omit=dev`).
 *
 * Built once per commit into node_modules/.cache/holdfast-prev-<commit>, which a second run reuses
 * (and `npm ci` of this checkout clears, as it clears every cache there). The build happens in a
 * staging folder renamed into place only when complete, so an interrupted or concurrent build never
 * leaves a half-built release where the next run would trust it.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');

/** The release that landed before issue 25's work began: the oldest this release rolls from (README "Rolling upgrades"). */
export const PREVIOUS_RELEASE_COMMIT = 'cb3da0c';

export interface PreviousRelease {
  /** Full commit id. */
  commit: string;
  /** The built release: `node <dir>/bin/holdfast.js server` with HOLDFAST_RUNTIME=dist runs it. */
  dir: string;
  bin: string;
  /** How long this run spent building it; null when the cached build was used. */
  buildMillis: number | null;
}

const MARKER = '.holdfast-previous-release.json';

export async function previousRelease(commitish = PREVIOUS_RELEASE_COMMIT): Promise<PreviousRelease> {
  const commit = await resolveCommit(commitish);
  const cacheRoot = path.join(root, 'node_modules/.cache');
  const dir = path.join(cacheRoot, `holdfast-prev-${commit.slice(0, 12)}`);
  const bin = path.join(dir, 'bin/holdfast.js');
  if (existsSync(path.join(dir, MARKER))) return { commit, dir, bin, buildMillis: null };

  const started = Date.now();
  mkdirSync(cacheRoot, { recursive: true });
  // Built outside node_modules: tsc emits nothing for a source whose path runs through a node_modules
  // folder (it takes it for a library's), which would drop the SDK files the old CLI imports.
  const staging = mkdtempSync(path.join(tmpdir(), `holdfast-prev-${commit.slice(0, 12)}-`));
  try {
    await run('sh', ['-c', `git -C "$ROOT" archive --format=tar "$COMMIT" | tar -x -C "$DEST"`], {
      env: { ...process.env, ROOT: root, COMMIT: commit, DEST: staging },
      maxBuffer: 16 * 1024 * 1024,
      timeout: 120_000,
    });
    const quietInstall = { ...process.env, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1', NEXT_TELEMETRY_DISABLED: '1', CI: 'true' };
    // Install scripts are skipped: nothing the server build or run needs comes from one (and none may download).
    await run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], {
      cwd: staging,
      env: quietInstall,
      timeout: 900_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    await run(process.execPath, [path.join(staging, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
      cwd: staging,
      timeout: 600_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    await run('npm', ['prune', '--omit=dev', '--no-audit', '--no-fund', '--ignore-scripts'], {
      cwd: staging,
      env: quietInstall,
      timeout: 600_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    const buildMillis = Date.now() - started;
    writeFileSync(path.join(staging, MARKER), JSON.stringify({ commit, builtAt: new Date().toISOString(), buildMillis }));
    // Copied beside the cache, then renamed into place: a half-copied release is never at `dir`.
    const arriving = mkdtempSync(`${dir}.arriving-`);
    await run('cp', ['-a', `${staging}/.`, arriving], { timeout: 300_000 });
    try {
      renameSync(arriving, dir);
    } catch (error) {
      rmSync(arriving, { recursive: true, force: true });
      // Another run finished the same build first: use its copy.
      if (!existsSync(path.join(dir, MARKER))) throw error;
    }
    rmSync(staging, { recursive: true, force: true });
    return { commit, dir, bin, buildMillis };
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
}

async function resolveCommit(commitish: string): Promise<string> {
  try {
    const { stdout } = await run('git', ['-C', root, 'rev-parse', '--verify', '--quiet', `${commitish}^{commit}`]);
    return stdout.trim();
  } catch {
    throw new Error(
      `commit ${commitish} (the previous release) is not in this clone's history: the rolling-upgrade test builds it from git. ` +
        `A shallow clone needs \`git fetch --unshallow\`.`,
    );
  }
}

/** The version the built release reports (its package.json), for the test's output. */
export function releaseVersion(release: PreviousRelease): string {
  return (JSON.parse(readFileSync(path.join(release.dir, 'package.json'), 'utf8')) as { version: string }).version;
}
