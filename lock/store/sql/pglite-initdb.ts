/**
 * A new embedded data directory is initialised (initdb) in a short-lived child process.
 *
 * Why: PGlite's initdb runs a second PGlite instance plus initdb.wasm inside the process and
 * copies the result across; their WASM memories stay resident until V8 collects them, which it
 * may never do while the server idles. Measured (bench/embedded-memory.ts, dist runtime): idle RSS
 * after a first start 686 MB with initdb in the server, against 238 MB after a restart on the same
 * directory. In a child, that heap dies with the child and the server opens the directory exactly
 * as it does on every restart. Cost: one extra node start on the very first start (about 0.1 s of
 * a first start that spends seconds in initdb anyway).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

/** PostgreSQL writes PG_VERSION once initdb has made the directory; PGlite tests the same file. */
export function dataDirIsInitialised(dataDir: string): boolean {
  return existsSync(path.join(dataDir, 'PG_VERSION'));
}

/**
 * Plain CommonJS for `node -e`, so the child needs neither tsx nor the compiled build: it loads
 * PGlite by its resolved path, opens (initdb runs) and closes (PGlite syncs the files).
 */
const CHILD_SCRIPT = `
const [pglitePath, dataDir, startParams] = JSON.parse(process.argv[1]);
require(pglitePath).PGlite.create({ dataDir, startParams })
  .then((db) => db.close())
  .catch((error) => {
    // PGlite's file system throws ErrnoError objects with no message: say the errno at least.
    const errno = error && typeof error.errno === 'number' ? 'ErrnoError errno ' + error.errno + ' (Emscripten numbering; 44 = ENOENT, 2 = EACCES)' : '';
    process.stderr.write(errno || String((error && error.stack) || error));
    process.exit(1);
  });
`;

export async function initDataDirInChild(dataDir: string, startParams: readonly string[]): Promise<void> {
  const pglitePath = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const failed = (why: string) => new Error(`initdb of the embedded data directory ${dataDir} failed: ${why}`);
  // PGlite creates only the last path component; the parents are ours to make (owner-only).
  await mkdir(dataDir, { recursive: true, mode: 0o700 }).catch((error: Error) => {
    throw failed(error.message);
  });
  await new Promise<void>((resolve, reject) => {
    // The child inherits this process's umask, so its files are owner-only like the server's.
    execFile(
      process.execPath,
      ['-e', CHILD_SCRIPT, JSON.stringify([pglitePath, dataDir, startParams])],
      { maxBuffer: 16 * 1024 * 1024 },
      (error, _stdout, stderr) => {
        if (error) reject(failed(stderr.trim() || error.message));
        else resolve();
      },
    );
  });
}
