/** `holdfast elect NAME [--value V] -- CMD [ARGS…]`: run CMD while this process leads election NAME. */
import { Option, type Command } from 'commander';
import type { CliContext } from '../context.js';
import { parseMillis } from '../duration.js';
import { CliError, EXIT } from '../exit-codes.js';
import { runElected } from '../run-elected.js';

interface ElectOptions {
  value?: string;
  ttl?: number;
  grace: number;
  owner?: string;
}

export function registerElect(program: Command, ctx: CliContext): void {
  program
    .command('elect <name> <command...>')
    .description('campaign for leadership of NAME; run COMMAND while this process leads, and exit with its exit code')
    .option('--value <value>', "the leader's value, shown by holdfast observe (its address, say; at most 4096 bytes)")
    .addOption(new Option('--ttl <ms>', "leadership TTL in ms, renewed every third of it (default: the server's, 30 s)").argParser(parseMillis))
    .addOption(new Option('--grace <ms>', 'after leadership is lost: SIGTERM, then SIGKILL this much later').argParser(parseMillis).default(10_000))
    .option('--owner <owner>', 'owner shown by observe, locks ls and the console (default: holdfast elect USER@HOST pid PID)')
    .addHelpText(
      'after',
      `
Waits (on the server) until elected, then runs COMMAND with HOLDFAST_LOCK_KEY (NAME) and HOLDFAST_FENCING_TOKEN (the
term: every later leader's is higher) in its environment; pass the token with every write. Put -- before COMMAND.
Exit: COMMAND's exit code (128+N if killed by signal N); 4 leadership was lost while COMMAND ran (COMMAND got
SIGTERM); 1 the server refused or could not be reached; 2 usage; 127 COMMAND not found.
SIGINT/SIGTERM/SIGHUP before election stop the campaign; after it they go to COMMAND, and NAME is resigned when it exits.`,
    )
    .action(async (name: string, command: string[], opts: ElectOptions) => {
      const [executable, ...args] = command as [string, ...string[]];
      const result = await runElected({
        url: ctx.url,
        token: await ctx.token(),
        name,
        ...(opts.value !== undefined ? { value: opts.value } : {}),
        ...(opts.ttl !== undefined ? { ttlMillis: opts.ttl } : {}),
        graceMillis: opts.grace,
        ...(opts.owner !== undefined ? { owner: opts.owner } : {}),
        command: executable,
        args,
        note: (message) => process.stderr.write(`holdfast: ${message}\n`),
      });
      switch (result.outcome) {
        case 'lost':
          throw new CliError(result.code, `leadership of ${name} (term ${result.fencingToken}) was lost while ${executable} ran: ${result.reason}`, EXIT.lockLost);
        case 'interrupted':
          throw new CliError('INTERRUPTED', `${result.signal} while campaigning for ${name}; ${executable} did not run`, result.exitCode);
        case 'not_granted': // a campaign waits until elected: never
          throw new CliError('NOT_GRANTED', `${name} was not granted; ${executable} did not run`, EXIT.unchanged);
        case 'exited':
          process.exitCode = result.exitCode;
      }
    });
}
