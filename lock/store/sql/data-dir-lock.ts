/**
 * One owner per embedded data directory: an exclusive lock taken before PGlite
 * opens the directory, held by the kernel and released when the process dies
 * (a SIGKILLed owner never blocks the next start).
 *
 * The lock is a listening Unix socket in Linux's abstract namespace, named after
 * the directory's device and inode (every path to one directory, symlinks
 * included, names the same lock). bind() is atomic and the kernel drops the name
 * with the last descriptor, so there is no stale file and no check-then-create
 * race. A second server that finds the name taken connects to it and is told the
 * owner's pid. Node has no flock(); the npm packages that add it need a native
 * build. Scope: abstract names are per network namespace, so two containers with
 * separate network namespaces sharing one volume do not see each other's lock.
 * Other platforms (no abstract namespace) fall back to a pid file created
 * exclusively, taken over only when its pid is no longer alive.
 */
import { createHash } from 'node:crypto';
import { chmod, mkdir, open, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';

export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly ownerPid: number | null,
  ) {
    super(
      `the embedded data directory ${dataDir} is in use by another Holdfast server` +
        (ownerPid !== null ? ` (pid ${ownerPid})` : '') +
        '; one data directory has exactly one server',
    );
  }
}

export interface DataDirLock {
  release(): Promise<void>;
}

const PID_FILE = 'holdfast.pid';

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
  await chmod(dataDir, 0o700);
  const lock = process.platform === 'linux' ? await abstractSocketLock(dataDir) : await pidFileLock(dataDir);
  // For people and tools: who holds the directory (the lock itself is the socket or the O_EXCL file).
  if (process.platform === 'linux') await writeFile(path.join(dataDir, PID_FILE), `${process.pid}\n`, { mode: 0o600 });
  return lock;
}

async function abstractSocketLock(dataDir: string): Promise<DataDirLock> {
  const { dev, ino } = await stat(dataDir, { bigint: true });
  const name = `\0holdfast-data-dir-${createHash('sha256').update(`${dev}:${ino}`).digest('hex').slice(0, 32)}`;
  const server = net.createServer((socket) => {
    // A second server that gave up asking (its timeout, a loaded machine) leaves a closed socket:
    // that EPIPE must not crash the owner, whose lock would then go with it.
    socket.on('error', () => {});
    socket.end(`${process.pid}\n`);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(name, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    throw new DataDirInUseError(dataDir, await askOwnerPid(name));
  }
  // The lock must not keep the process alive on its own.
  server.unref();
  return {
    release: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
      }),
  };
}

function askOwnerPid(name: string): Promise<number | null> {
  return new Promise((resolve) => {
    let answer = '';
    const socket = net.connect(name);
    const done = (pid: number | null) => {
      socket.destroy();
      resolve(pid);
    };
    // Only a refusal's message waits for this (the owner answers at once unless the machine is starved).
    socket.setTimeout(10_000, () => done(null));
    socket.on('data', (chunk) => (answer += chunk.toString('utf8')));
    socket.on('end', () => done(/^\d+$/.test(answer.trim()) ? Number(answer.trim()) : null));
    socket.on('error', () => done(null));
  });
}

async function pidFileLock(dataDir: string): Promise<DataDirLock> {
  const file = path.join(dataDir, PID_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(file, 'wx', 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      return { release: () => unlink(file).catch(() => undefined) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const pid = Number((await readFile(file, 'utf8').catch(() => '')).trim());
      if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) throw new DataDirInUseError(dataDir, pid);
      await unlink(file).catch(() => undefined);
    }
  }
  throw new DataDirInUseError(dataDir, null);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
