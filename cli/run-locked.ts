/**
 * `holdfast lock`: run a command while holding a lock, through the SDK
 * (`session.withLock` renews it in the background), like `etcdctl lock` and
 * `consul lock`; v3: one of N permits (`-n N`, a semaphore) or a shared (reader)
 * hold (`--shared`), each its own grant with its own fencing token.
 *
 * - Not granted within the wait → not started, result `not_granted`.
 * - The lock is lost while the command runs (revoked, expired unrenewed,
 *   session killed): the command gets SIGTERM at once and SIGKILL after the
 *   grace period — its fencing token no longer protects anything, so it must
 *   stop writing — and the result is `lost`.
 * - SIGINT/SIGTERM/SIGHUP to holdfast go to the command; the lock is released
 *   after the command exits (never while it may still write). Before the grant
 *   they stop the wait instead.
 * - The session is closed at the end, whatever happened.
 * - `holdfast elect` (run-elected.ts) runs its command in the same frame (`runHolding`), under a
 *   leadership instead of a lock.
 * - The command gets this process's environment without Holdfast's credentials (issue 24 item 6):
 *   the token holdfast uses is holdfast's, not the job's; the job gets the key and fencing token.
 */
import { spawn } from 'node:child_process';
import { constants as osConstants, hostname, userInfo } from 'node:os';
import {
  AcquirePolicy,
  LockClient,
  LockLostError,
  MAX_WAIT_MILLIS,
  type LockLossCode,
  type LockMode,
  type LockSession,
} from '../client/index.js';
import { CliError, EXIT } from './exit-codes.js';

export interface RunLockedOptions {
  url: string;
  token?: string;
  key: string;
  /** `shared`: a reader (`holdfast lock --shared`); exclusive when omitted. */
  mode?: LockMode;
  /** Holders KEY admits at once (`holdfast lock -n N`): a semaphore when > 1; a mutex when omitted. */
  limit?: number;
  /** Lock TTL; the server's default when omitted. */
  ttlMillis?: number;
  /** How long to wait for the lock; undefined waits until granted. */
  waitMillis?: number;
  /** SIGTERM → SIGKILL grace after the lock is lost. */
  graceMillis: number;
  owner?: string;
  command: string;
  args: string[];
  /** Progress notes for a human (stderr). */
  note(message: string): void;
}

export type RunLockedResult =
  | { outcome: 'exited'; exitCode: number; fencingToken: string }
  /** `code`: HOLD_LIMIT_REACHED when the lock's policy refused to keep it longer, else LOCK_LOST. */
  | { outcome: 'lost'; exitCode: number; fencingToken: string; reason: string; code: LockLossCode }
  | { outcome: 'not_granted'; exitCode: number }
  | { outcome: 'interrupted'; exitCode: number; signal: NodeJS.Signals };

const FORWARDED_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
/** One SDK acquire call's budget while waiting without end: the loop below starts another. */
const WAIT_ROUND_MILLIS = 60_000;

export async function runLocked(options: RunLockedOptions): Promise<RunLockedResult> {
  return runHolding({ ...options, owner: options.owner ?? defaultOwner('holdfast lock') }, async (session, interrupt, supervise) => {
    const deadline = options.waitMillis === undefined ? Infinity : Date.now() + options.waitMillis;
    for (;;) {
      const budget = Math.max(0, Math.min(deadline - Date.now(), WAIT_ROUND_MILLIS));
      const policy = new AcquirePolicy({
        totalBudgetMillis: budget,
        waitMillis: Math.min(budget, MAX_WAIT_MILLIS),
        maxAttempts: 1_000_000,
        baseBackoffMillis: 50,
        maxBackoffMillis: 1_000,
      });
      const result = await session.withLock(options.key, (handle) => supervise(handle), {
        policy,
        signal: interrupt,
        ...(options.mode !== undefined ? { mode: options.mode } : {}),
        ...(options.limit !== undefined ? { limit: options.limit } : {}),
        ...(options.ttlMillis !== undefined ? { ttlMillis: options.ttlMillis } : {}),
      });
      if (result !== null) return result;
      if (Date.now() >= deadline) return { outcome: 'not_granted', exitCode: EXIT.unchanged };
    }
  });
}

/** What running CMD under a hold needs of it: a lock handle (`holdfast lock`) or a leadership (`holdfast elect`). */
export interface SupervisedHold {
  readonly key: string;
  readonly fencingToken: string;
  readonly lost: boolean;
  readonly signal: AbortSignal;
}

export interface HoldingOptions {
  url: string;
  token?: string;
  owner: string;
  command: string;
  args: string[];
  graceMillis: number;
  note(message: string): void;
}

/**
 * The frame every "run CMD while holding" command shares: a session opened through the SDK
 * and closed at the end whatever happened; SIGINT/SIGTERM/SIGHUP passed to CMD once it runs,
 * and before that aborting `interrupt` (the wait), which ends as `interrupted`. `hold` takes
 * the key its own way and calls `supervise` to run CMD under what it took.
 */
export async function runHolding(
  options: HoldingOptions,
  hold: (session: LockSession, interrupt: AbortSignal, supervise: (held: SupervisedHold) => Promise<RunLockedResult>) => Promise<RunLockedResult>,
): Promise<RunLockedResult> {
  const client = new LockClient({ baseUrl: options.url, ...(options.token ? { token: options.token } : {}) });
  const interrupt = new AbortController();
  let child: ReturnType<typeof spawn> | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (child !== undefined) child.kill(signal);
    else interrupt.abort(signal);
  };
  for (const signal of FORWARDED_SIGNALS) process.on(signal, onSignal);

  try {
    const session = await client.openSession({ owner: options.owner });
    try {
      return await hold(session, interrupt.signal, (held) => supervise(held, options, (c) => (child = c)));
    } catch (error) {
      if (interrupt.signal.aborted) {
        const signal = interrupt.signal.reason as NodeJS.Signals;
        return { outcome: 'interrupted', signal, exitCode: 128 + (osConstants.signals[signal] ?? 0) };
      }
      throw error;
    } finally {
      await session.close().catch((error: unknown) => options.note(`could not close the session: ${(error as Error).message}`));
    }
  } finally {
    for (const signal of FORWARDED_SIGNALS) process.off(signal, onSignal);
  }
}

/** Why the SDK stopped vouching, as the CLI's error code: a loss the server named, else LOCK_LOST. */
function lossCode(reason: unknown): LockLossCode {
  return reason instanceof LockLostError ? reason.code : 'LOCK_LOST';
}

/** Start the command under `handle` and wait for it; stop it if the lock is lost. */
function supervise(
  handle: SupervisedHold,
  options: HoldingOptions,
  started: (child: ReturnType<typeof spawn>) => void,
): Promise<RunLockedResult> {
  const fencingToken = handle.fencingToken;
  if (handle.lost) {
    return Promise.resolve({ outcome: 'lost', exitCode: EXIT.lockLost, fencingToken, reason: String(handle.signal.reason), code: lossCode(handle.signal.reason) });
  }
  return new Promise((resolve, reject) => {
    const child = spawn(options.command, options.args, {
      stdio: 'inherit',
      env: { ...withoutCredentials(process.env), HOLDFAST_LOCK_KEY: handle.key, HOLDFAST_FENCING_TOKEN: fencingToken },
    });
    started(child);
    let lostReason: string | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    const onLost = () => {
      if (!handle.lost) return; // aborted by our own release after exit: not a loss
      lostReason = (handle.signal.reason as Error | undefined)?.message ?? 'lock lost';
      options.note(`lock ${JSON.stringify(handle.key)} lost (${lostReason}): stopping the command (SIGTERM, SIGKILL in ${options.graceMillis} ms)`);
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), options.graceMillis);
    };
    handle.signal.addEventListener('abort', onLost, { once: true });
    child.once('error', (error: NodeJS.ErrnoException) => {
      handle.signal.removeEventListener('abort', onLost);
      reject(
        new CliError(
          'COMMAND_NOT_STARTED',
          `cannot run ${options.command}: ${error.code ?? error.message}`,
          error.code === 'ENOENT' || error.code === 'EACCES' ? EXIT.commandNotFound : EXIT.failed,
        ),
      );
    });
    child.once('exit', (code, signal) => {
      handle.signal.removeEventListener('abort', onLost);
      if (killTimer) clearTimeout(killTimer);
      const exitCode = code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0);
      resolve(
        lostReason !== undefined
          ? { outcome: 'lost', exitCode: EXIT.lockLost, fencingToken, reason: lostReason, code: lossCode(handle.signal.reason) }
          : { outcome: 'exited', exitCode, fencingToken },
      );
    });
  });
}

/**
 * Holdfast's credentials among environment variables: `HOLDFAST_TOKEN`, `HOLDFAST_TOKEN_FILE`, and any
 * other `HOLDFAST_*` name that names a token, key, secret or password (the server's
 * `HOLDFAST_ADMIN_TOKENS_FILE` and `HOLDFAST_AUDIT_KEY_FILE` included). `HOLDFAST_LOCK_KEY` and
 * `HOLDFAST_FENCING_TOKEN` are what CMD is given, not credentials.
 */
export function isCredentialVariable(name: string): boolean {
  const upper = name.toUpperCase();
  if (upper === 'HOLDFAST_LOCK_KEY' || upper === 'HOLDFAST_FENCING_TOKEN') return false;
  return upper.startsWith('HOLDFAST_') && /TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|_KEY(_FILE)?$/.test(upper);
}

export function withoutCredentials(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !isCredentialVariable(name))) as NodeJS.ProcessEnv;
}

/** Who holds the lock, as the console and `locks ls --owner` show it (≤ 128 characters): `COMMAND USER@HOST pid PID`. */
export function defaultOwner(command: string): string {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry (some containers): keep "unknown".
  }
  return `${command} ${user}@${hostname()} pid ${process.pid}`.slice(0, 128);
}
