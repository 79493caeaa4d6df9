/**
 * The embedded data directory's lock and its files (issue 24 item 10), in process and with a
 * holder process:
 * - a local user who binds the abstract socket name the lock used to be (named after the
 *   directory, so anyone could compute and bind it first, and answer any pid) neither blocks the
 *   server nor gets named as its owner: the lock is `holdfast.pid` inside the 0700 directory, held
 *   with flock;
 * - a second taker is refused naming the holder's real pid and the lock file; the lock is free
 *   the moment the holder is killed with SIGKILL;
 * - a data directory another user owns is refused, naming the owner and the fix;
 * - a `pgdata` that is a symbolic link works (it used to fail with `holdfast: [object Object]`),
 *   a link to nowhere fails with a message naming both ends, and PGlite's bare ErrnoError objects
 *   become messages with the directory and the errno name.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, chownSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirInUseError, LOCK_FILE, lockDataDir } from '../../lock/store/sql/data-dir-lock.js';
import { PgliteDatabase, pgliteFailure } from '../../lock/store/sql/pglite-database.js';
import { BIN } from '../support/server-process.js';
import { pgliteTemplate } from '../support/server.js';

const HOLDER = path.resolve(import.meta.dirname, 'support/data-dir-holder.ts');
const root = mkdtempSync(path.join(tmpdir(), 'holdfast-dirlock-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

/** The abstract socket name the lock used to be: computable by any local user from `stat DIR`. */
function legacyAbstractName(dir: string): string {
  const { dev, ino } = statSync(dir, { bigint: true });
  return `\0holdfast-data-dir-${createHash('sha256').update(`${dev}:${ino}`).digest('hex').slice(0, 32)}`;
}

async function squat(name: string): Promise<net.Server> {
  const squatter = net.createServer((socket) => socket.end('1\n'));
  await new Promise<void>((resolve, reject) => {
    squatter.once('error', reject);
    squatter.listen(name, () => resolve());
  });
  return squatter;
}

function holder(dir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', HOLDER, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (chunk) => (err += chunk));
    child.stdout!.on('data', (chunk) => String(chunk).includes('locked') && resolve(child));
    child.once('exit', (code) => reject(new Error(`holder exited ${code}: ${err}`)));
  });
}

describe('the data directory lock', () => {
  it('an abstract-socket squatter (the old lock name, answering "pid 1") neither blocks the server nor is blamed', async () => {
    const dir = path.join(root, 'squatted');
    mkdirSync(dir, { mode: 0o700 });
    const squatter = await squat(legacyAbstractName(dir));
    try {
      const lock = await lockDataDir(dir);
      expect(readFileSync(path.join(dir, LOCK_FILE), 'utf8').trim()).toBe(String(process.pid));
      await lock.release();
    } finally {
      squatter.close();
    }
  });

  it('a second taker is refused naming the holder’s pid and the lock file; after SIGKILL of the holder the lock is free', async () => {
    const dir = path.join(root, 'held');
    const child = await holder(dir);
    const refused = await lockDataDir(dir).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DataDirInUseError);
    expect((refused as DataDirInUseError).ownerPid).toBe(child.pid);
    expect((refused as Error).message).toContain(`(pid ${child.pid}, from ${path.join(dir, LOCK_FILE)})`);
    expect((refused as Error).message).toContain(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);

    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    const lock = await lockDataDir(dir);
    expect(readFileSync(path.join(dir, LOCK_FILE), 'utf8').trim()).toBe(String(process.pid));
    await lock.release();
  });

  it.runIf(process.getuid?.() === 0)('a data directory owned by another user is refused, naming its owner and the fix', async () => {
    const dir = path.join(root, 'theirs');
    mkdirSync(dir, { mode: 0o777 });
    chownSync(dir, 4242, 4242);
    await expect(lockDataDir(dir)).rejects.toThrow(/owned by uid 4242, not by this user \(uid 0\).*chown -R 0/);
  });
});

describe('a symbolic link for pgdata', () => {
  it('an initialised pgdata reached through a link opens, with its data', async () => {
    const real = path.join(root, 'disk2-pgdata');
    const first = await PgliteDatabase.open(real, await pgliteTemplate());
    await first.exec("CREATE TABLE marker (v text); INSERT INTO marker VALUES ('through the link')");
    await first.close();

    const owner = path.join(root, 'owner-linked');
    mkdirSync(owner, { mode: 0o700 });
    symlinkSync(real, path.join(owner, 'pgdata'));
    const linked = await PgliteDatabase.open(path.join(owner, 'pgdata'), undefined, { ownerDir: owner });
    try {
      expect(await linked.query('SELECT v FROM marker')).toEqual([{ v: 'through the link' }]);
      // The walk made the link's target owner-only too.
      expect(statSync(real).mode & 0o077).toBe(0);
    } finally {
      await linked.close();
    }
  });

  it('a link to nowhere fails naming the link and its target, not "[object Object]"', async () => {
    const owner = path.join(root, 'owner-dangling');
    mkdirSync(owner, { mode: 0o700 });
    symlinkSync(path.join(root, 'missing-disk'), path.join(owner, 'pgdata'));
    const error = await PgliteDatabase.open(path.join(owner, 'pgdata'), undefined, { ownerDir: owner }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(
      `the embedded data directory ${path.join(owner, 'pgdata')} is a symbolic link to ${path.join(root, 'missing-disk')}, which does not exist; create that directory (owner-only, chmod 700) or remove the link`,
    );
  });

  it("PGlite's bare ErrnoError objects become messages with the directory and the errno's name", () => {
    const errnoError = Object.assign(Object.create({ constructor: { name: 'ErrnoError' } }) as object, { name: 'ErrnoError', errno: 44 });
    const error = pgliteFailure(errnoError, '/srv/holdfast/pgdata');
    expect(error.message).toMatch(/^PGlite could not open the embedded data directory \/srv\/holdfast\/pgdata: ENOENT/);
    expect(String(error)).not.toContain('[object Object]');
  });
});

describe('holdfast server on a data directory whose pgdata links to nowhere', () => {
  it('exits 1 with the link and its target named, never "holdfast: [object Object]"', async () => {
    const owner = path.join(root, 'server-dangling');
    mkdirSync(owner, { mode: 0o700 });
    symlinkSync(path.join(root, 'unmounted'), path.join(owner, 'pgdata'));
    const child = spawn(process.execPath, [BIN, 'server'], {
      env: { ...process.env, HOLDFAST_STORE: 'embedded', HOLDFAST_DATA_DIR: owner, HOLDFAST_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, output).toBe(1);
    expect(output).toContain(`holdfast: the embedded data directory ${path.join(owner, 'pgdata')} is a symbolic link to ${path.join(root, 'unmounted')}, which does not exist`);
    expect(output).not.toContain('[object Object]');
    expect(output).not.toContain('serving on');
  }, 120_000);
});
