/**
 * The console's secret: iron-session's seal password for the session cookie and for the token a
 * sign-in code carries (sealed before the lock server keeps it), and the CSRF HMAC key.
 *
 * `HOLDFAST_CONSOLE_SECRET_FILE` (issue 25, console replicas): every replica reads the same file,
 * so a cookie sealed by one is opened by the others, and a restarted console still opens the
 * cookies it sealed before. The file's first line, at least 32 characters (`openssl rand -hex 32`);
 * refused — the console does not start serving sign-ins — when others can read it (as the lock
 * server refuses its tokens file). Without the variable, a random secret per process: one console
 * replica, whose restart voids every cookie (everyone signs in again).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';

export const MIN_SECRET_CHARS = 32;

export class ConsoleSecretError extends Error {}

export function loadConsoleSecret(env: Record<string, string | undefined> = process.env): string {
  const file = env.HOLDFAST_CONSOLE_SECRET_FILE?.trim();
  if (!file) return randomBytes(32).toString('base64url');
  assertPrivate(file);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConsoleSecretError(`cannot read HOLDFAST_CONSOLE_SECRET_FILE ${file}: ${(error as Error).message}`);
  }
  const secret = text.split(/\r?\n/, 1)[0]!.trim();
  if (secret.length < MIN_SECRET_CHARS) {
    throw new ConsoleSecretError(
      `HOLDFAST_CONSOLE_SECRET_FILE ${file}: the first line must be at least ${MIN_SECRET_CHARS} characters (openssl rand -hex 32 > ${file})`,
    );
  }
  return secret;
}

/** The lock server's rule for secret files (lock/secret-files.ts), which app/ cannot import: owner-only, or root-owned and at most group-readable. */
function assertPrivate(file: string): void {
  const uid = process.getuid?.();
  if (uid === undefined) return;
  let info: ReturnType<typeof statSync>;
  try {
    info = statSync(file);
  } catch {
    return; // the read reports it
  }
  if (!info.isFile()) return;
  const mode = info.mode & 0o777;
  const allowed = info.uid === 0 ? 0o740 : 0o700;
  if ((info.uid !== uid && info.uid !== 0) || (mode & ~allowed) !== 0) {
    throw new ConsoleSecretError(
      `refusing HOLDFAST_CONSOLE_SECRET_FILE ${file} (mode ${mode.toString(8).padStart(4, '0')}, uid ${info.uid}): ` +
        `others could read or change it; fix: chown ${uid} ${file} && chmod 600 ${file}`,
    );
  }
}
