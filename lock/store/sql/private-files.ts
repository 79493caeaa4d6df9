/**
 * The embedded store's files are the lock state and the audit trail: owner-only
 * (directories 0700, files 0600). PGlite creates files with the process umask,
 * so the embedded server narrows the umask before opening, and this walk
 * tightens whatever an earlier run (or another umask) left behind.
 */
import { chmod, lstat, readdir } from 'node:fs/promises';
import path from 'node:path';

/** Narrows the umask to owner-only; worker threads cannot change it (tests), which is harmless there. */
export function ownerOnlyUmask(): void {
  try {
    process.umask(0o077);
  } catch {
    // ERR_WORKER_UNSUPPORTED_OPERATION: the walk below still tightens the files.
  }
}

export async function makeOwnerOnly(root: string): Promise<void> {
  const info = await lstat(root);
  if (info.isSymbolicLink()) return;
  if (info.isDirectory()) {
    if ((info.mode & 0o777) !== 0o700) await chmod(root, 0o700);
    for (const entry of await readdir(root)) await makeOwnerOnly(path.join(root, entry));
  } else if ((info.mode & 0o777 & ~0o600) !== 0) {
    await chmod(root, 0o600);
  }
}
