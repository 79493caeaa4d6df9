/**
 * Files that hold secrets (the tokens file, the audit key, the CLI's token files, the local server
 * identity key) are refused when others can read them, as ssh refuses a private key: a token that
 * every local user can read is every local user's token.
 *
 * The rule (PostgreSQL's for its TLS key, which Kubernetes secret volumes need):
 * - owned by this process's user: nothing for group or others (0600, 0400);
 * - owned by root: at most read for the group (0640, 0440) — a Kubernetes secret volume with
 *   `fsGroup` is root-owned and group-readable, and only root decides who is in that group;
 * - owned by anyone else: refused (that user can rewrite the secret).
 * Only regular files are checked: a pipe (`--token-file <(pass show holdfast)`) or /dev/stdin has
 * no permissions worth the name. Symbolic links are followed (secret volumes are links).
 * On platforms without uids (Windows) nothing is checked.
 */
import { stat } from 'node:fs/promises';

export class SecretFileError extends Error {}

export interface SecretFileCheckOptions {
  /** The user the check is made for; defaults to this process's uid (tests pass another). */
  uid?: number;
}

/** Throws SecretFileError naming `file` and the command that fixes it; `what` says which file it is. */
export async function assertPrivateFile(file: string, what: string, options: SecretFileCheckOptions = {}): Promise<void> {
  const uid = options.uid ?? process.getuid?.();
  if (uid === undefined) return;
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(file);
  } catch {
    // Missing or unreadable: the caller's read reports that in its own words.
    return;
  }
  if (!info.isFile()) return;
  const mode = info.mode & 0o777;
  if (info.uid !== uid && info.uid !== 0) {
    throw new SecretFileError(
      `refusing ${what} ${file}: it is owned by uid ${info.uid}, not by this user (uid ${uid}) or root, so that user can change it; ` +
        `fix: chown ${uid} ${file} && chmod 600 ${file}`,
    );
  }
  const allowed = info.uid === 0 ? 0o740 : 0o700;
  if ((mode & ~allowed) !== 0) {
    throw new SecretFileError(
      `refusing ${what} ${file}: its mode ${mode.toString(8).padStart(4, '0')} lets ${whoCanRead(mode, info.uid === 0)} read or change it; ` +
        `a secret file must be private to its owner: fix: chmod 600 ${file}`,
    );
  }
}

function whoCanRead(mode: number, rootOwned: boolean): string {
  const others = (mode & 0o007) !== 0;
  const group = rootOwned ? (mode & 0o030) !== 0 : (mode & 0o070) !== 0;
  if (group && others) return 'its group and every other user';
  return others ? 'every other user' : 'its group';
}
