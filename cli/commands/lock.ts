/**
 * `holdfast lock KEY [-n N | --shared] [--ttl MS] [--wait MS] -- CMD [ARGS…]`: run CMD while holding
 * KEY — alone (a mutex), as one of N holders (a semaphore, like `consul lock -n`) or beside other
 * `--shared` holders (a reader).
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { LOCK_LIMIT } from '../../contract/wire-rules.js';
import type { CliContext } from '../context.js';
import { parseMillis } from '../duration.js';
import { CliError, EXIT } from '../exit-codes.js';
import { runLocked } from '../run-locked.js';

interface LockOptions {
  limit?: number;
  shared?: boolean;
  ttl?: number;
  wait?: number;
  grace: number;
  owner?: string;
}

export function registerLock(program: Command, ctx: CliContext): void {
  program
    .command('lock <key> <command...>')
    .description('run COMMAND while holding KEY (renewed in the background) and exit with its exit code')
    .addOption(
      new Option('-n, --limit <n>', `semaphore: run while holding one of N permits of KEY (${LOCK_LIMIT.min}–${LOCK_LIMIT.max}); every holder of KEY must name the same N`).argParser(parseLimit),
    )
    .addOption(new Option('--shared', 'shared (reader) lock: run beside other --shared holders of KEY, never beside a plain (exclusive) one').conflicts('limit'))
    .addOption(new Option('--ttl <ms>', "lock TTL in ms, renewed every third of it (default: the server's, 30 s)").argParser(parseMillis))
    .addOption(new Option('--wait <ms>', 'give up (exit 3) if not granted within this many ms; 0 tries once (default: wait until granted)').argParser(parseMillis))
    .addOption(new Option('--grace <ms>', 'after the lock is lost: SIGTERM, then SIGKILL this much later').argParser(parseMillis).default(10_000))
    .option('--owner <owner>', 'owner shown in locks ls and the console (default: holdfast lock USER@HOST pid PID)')
    .addHelpText(
      'after',
      `
Put -- before COMMAND when it has options of its own: holdfast lock jobs/nightly -- ./backup.sh --full
At most N at once: holdfast lock -n 3 jobs/encode -- ./encode.sh. Readers together, writers alone:
holdfast lock --shared db/reports -- ./report.sh beside holdfast lock db/reports -- ./migrate.sh (a waiting
writer keeps new readers out). -n with --shared is a usage error: a shared lock has no limit.
COMMAND gets HOLDFAST_LOCK_KEY and HOLDFAST_FENCING_TOKEN (every holder its own) in its environment: pass the
token with every write.
Exit: COMMAND's exit code (128+N if killed by signal N); 3 not granted within --wait; 4 the lock was lost while
COMMAND ran (COMMAND got SIGTERM); 1 the server refused or could not be reached (LIMIT_MISMATCH: KEY is held
with another -n); 2 usage; 127 COMMAND not found.
SIGINT/SIGTERM/SIGHUP are passed to COMMAND; the lock is released after it exits.`,
    )
    .action(async (key: string, command: string[], opts: LockOptions) => {
      const [executable, ...args] = command as [string, ...string[]];
      const result = await runLocked({
        url: ctx.url,
        token: await ctx.token(),
        key,
        ...(opts.shared ? { mode: 'shared' as const } : {}),
        ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
        ...(opts.ttl !== undefined ? { ttlMillis: opts.ttl } : {}),
        ...(opts.wait !== undefined ? { waitMillis: opts.wait } : {}),
        graceMillis: opts.grace,
        ...(opts.owner !== undefined ? { owner: opts.owner } : {}),
        command: executable,
        args,
        note: (message) => process.stderr.write(`holdfast: ${message}\n`),
      });
      switch (result.outcome) {
        case 'not_granted':
          throw new CliError('NOT_GRANTED', `${key} was not granted within ${opts.wait} ms; ${executable} did not run`, EXIT.unchanged);
        case 'lost':
          // Exit 4 either way; HOLD_LIMIT_REACHED tells a script the policy ended it, not a revoke or an expiry.
          throw new CliError(result.code, `${key} (fencing token ${result.fencingToken}) was lost while ${executable} ran: ${result.reason}`, EXIT.lockLost);
        case 'interrupted':
          throw new CliError('INTERRUPTED', `${result.signal} while waiting for ${key}; ${executable} did not run`, result.exitCode);
        case 'exited':
          process.exitCode = result.exitCode;
      }
    });
}

/** `-n N`: a whole number within contract's limit bounds. */
function parseLimit(text: string): number {
  const trimmed = text.trim();
  const limit = /^\d{1,4}$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  if (!(limit >= LOCK_LIMIT.min && limit <= LOCK_LIMIT.max)) {
    throw new InvalidArgumentError(`"${text}" is not a whole number from ${LOCK_LIMIT.min} to ${LOCK_LIMIT.max}`);
  }
  return limit;
}
