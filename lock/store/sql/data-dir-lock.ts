/**
 * One owner per embedded data directory: an exclusive lock taken before PGlite
 * opens the directory, held by the kernel and released when the process dies
 * (a SIGKILLed owner never blocks the next start).
 *
 * The lock is `holdfast.pid` inside the data directory, held with flock(2) for the server's
 * life. The directory is made 0700 first, so no other local user can open, create or replace
 * the file: another user can neither take the lock first nor fake its owner (issue 24 item 10:
 * the lock used to be an abstract Unix socket named after the directory, a name any local user
 * could bind first — the server then refused to start, blaming whatever pid the squatter gave).
 *
 * Node has no flock() and the npm packages that add it need a native build, so the server opens
 * the file and has util-linux's `flock -x -n 3` lock that open file description, passed to it as
 * its fd 3. A flock belongs to the open file description, not to the process that asked: it stays
 * held through the server's own descriptor after the short-lived `flock` exits, and the kernel
 * drops it when the server's descriptor closes — at release, or when the process ends however it
 * ends (`kill -9` included). No stale state, no takeover race: a second server's `flock -n` fails
 * at once, and it reads the owner's pid from the file (the owner writes it after taking the lock).
 * The file is never deleted (unlinking a flocked file lets two servers lock two different files).
 * Every path to the directory (symlinks, bind mounts) reaches the same file, and the lock holds
 * across containers sharing one volume (one kernel).
 *
 * Without a `flock` program (util-linux and busybox have one; macOS has none) the fallback is the
 * file created exclusively (O_EXCL) and taken over only when the pid in it is no longer alive:
 * best effort (two servers taking over the same stale file at the same instant can both win).
 */
import { spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { chmod, mkdir, open, readFile, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly ownerPid: number | null,
    readonly lockFile: string = path.join(dataDir, LOCK_FILE),
  ) {
    super(
      `the embedded data directory ${dataDir} is in use by another Holdfast server ` +
        (ownerPid !== null ? `(pid ${ownerPid}, from ${lockFile})` : `(its pid is not in ${lockFile} yet)`) +
        '; one data directory has exactly one server: stop that server, or set HOLDFAST_DATA_DIR to another directory',
    );
  }
}

export interface DataDirLock {
  release(): Promise<void>;
}

/** The lock file, and for people and tools the owner's pid. */
export const LOCK_FILE = 'holdfast.pid';

/**
 * Locks this process already holds, by directory: `holdfast server` takes the lock before
 * loading the rest of the server (so a second server is refused in well under a second,
 * not after seconds of module loading), and the store takes it again when it opens.
 */
const heldHere = new Map<string, { lock: Promise<DataDirLock>; refs: number }>();

export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const key = path.resolve(dataDir);
  let held = heldHere.get(key);
  if (!held) {
    held = { lock: takeDataDirLock(key), refs: 0 };
    heldHere.set(key, held);
    held.lock.catch(() => heldHere.delete(key));
  }
  held.refs += 1;
  const entry = held;
  const lock = await entry.lock;
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      entry.refs -= 1;
      if (entry.refs > 0) return;
      heldHere.delete(key);
      await lock.release();
    },
  };
}

async function takeDataDirLock(dataDir: string): Promise<DataDirLock> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  // Like PostgreSQL's: a directory another user owns (made first in a shared /tmp, say) is theirs to
  // read and to change back; the server refuses it rather than trusting a lock inside it.
  const uid = process.getuid?.();
  const owner = (await stat(dataDir)).uid;
  if (uid !== undefined && owner !== uid) {
    throw new Error(
      `the embedded data directory ${dataDir} is owned by uid ${owner}, not by this user (uid ${uid}): its owner could read or replace the store's files; ` +
        `use a directory of your own (HOLDFAST_DATA_DIR), or chown -R ${uid} ${dataDir}`,
    );
  }
  // Before the lock file is opened: nobody else may create, replace or open files in here.
  await chmod(dataDir, 0o700);
  return (await flockLock(dataDir)) ?? (await pidFileLock(dataDir));
}

/** The flock(2) lock, or null when there is no `flock` program to take it. */
async function flockLock(dataDir: string): Promise<DataDirLock | null> {
  const file = path.join(dataDir, LOCK_FILE);
  let handle: FileHandle;
  try {
    handle = await open(file, fsConstants.O_RDWR | fsConstants.O_CREAT | (fsConstants.O_NOFOLLOW ?? 0), 0o600);
  } catch (error) {
    throw new Error(`cannot open the data directory's lock file ${file}: ${(error as Error).message}`);
  }
  let outcome: FlockOutcome;
  try {
    outcome = await flockExclusive(handle.fd);
  } catch (error) {
    await handle.close();
    throw error;
  }
  if (outcome === 'unsupported') {
    await handle.close();
    return null;
  }
  if (outcome === 'held') {
    await handle.close();
    throw new DataDirInUseError(dataDir, await recordedPid(file), file);
  }
  await handle.truncate(0);
  await handle.write(`${process.pid}\n`, 0);
  let closed: Promise<void> | undefined;
  return {
    // Closing the server's descriptor drops the lock (the file stays: see the header).
    release: () => (closed ??= handle.close()),
  };
}

type FlockOutcome = 'locked' | 'held' | 'unsupported';

/** `flock -x -n 3` on the open file description `fd`, handed to the child as its fd 3. */
function flockExclusive(fd: number): Promise<FlockOutcome> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    const child = spawn('flock', ['-x', '-n', '3'], { stdio: ['ignore', 'ignore', 'pipe', fd] });
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    child.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') resolve('unsupported');
      else reject(new Error(`cannot run flock to lock the data directory: ${error.message}`));
    });
    child.once('close', (code) => {
      if (code === 0) resolve('locked');
      // util-linux and busybox both exit 1 when -n finds the lock taken.
      else if (code === 1) resolve('held');
      else if (code !== null) reject(new Error(`flock could not lock the data directory (exit ${code}): ${stderr.trim()}`));
    });
  });
}

async function recordedPid(file: string): Promise<number | null> {
  const text = (await readFile(file, 'utf8').catch(() => '')).trim();
  return /^\d+$/.test(text) && Number(text) > 0 ? Number(text) : null;
}

async function pidFileLock(dataDir: string): Promise<DataDirLock> {
  const file = path.join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(file, 'wx', 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      return { release: () => unlink(file).catch(() => undefined) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const pid = await recordedPid(file);
      if (pid !== null && isAlive(pid)) throw new DataDirInUseError(dataDir, pid, file);
      await unlink(file).catch(() => undefined);
    }
  }
  throw new DataDirInUseError(dataDir, null, file);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
