/**
 * The `holdfast` command tree: global options and every command (one file each
 * under cli/commands/). Building it has no side effects, so tests and the
 * completion generator can walk it.
 */
import { Command, Option } from 'commander';
import { registerAudit } from './commands/audit.js';
import { registerBackup } from './commands/backup.js';
import { registerCompletion } from './commands/completion.js';
import { registerElect } from './commands/elect.js';
import { registerLock } from './commands/lock.js';
import { registerLocks } from './commands/locks.js';
import { registerLocksTop } from './commands/locks-top.js';
import { registerObserve } from './commands/observe.js';
import { registerPolicies } from './commands/policies.js';
import { registerRevoke } from './commands/revoke.js';
import { registerServer } from './commands/server.js';
import { registerSessions } from './commands/sessions.js';
import { registerStatus } from './commands/status.js';
import { registerTokens } from './commands/tokens.js';
import { registerVersion } from './commands/version.js';
import { CliContext, OUTPUT_FORMATS } from './context.js';

export interface ProgramOptions {
  /** Leave commander's own usage message out (main.ts prints the JSON error under -o json). */
  quietUsageErrors?: boolean;
}

export function buildProgram(options: ProgramOptions = {}): { program: Command; ctx: CliContext } {
  const program = new Command()
    .name('holdfast')
    .description('Holdfast: a distributed lock service with fencing tokens')
    // Usage errors end in CommanderError (exit 2 in main.ts), not process.exit; inherited by every subcommand.
    .exitOverride()
    // Set before any subcommand exists: subcommands copy it when created.
    .configureOutput(options.quietUsageErrors ? { outputError: () => {} } : {})
    .showHelpAfterError(options.quietUsageErrors ? false : '(add --help for usage)')
    .addOption(new Option('--url <url>', 'lock server URL (a path prefix is kept: http://host/holdfast)').env('HOLDFAST_URL').default('http://127.0.0.1:7070'))
    .addOption(new Option('--token-file <file>', 'file whose first line is the bearer token').env('HOLDFAST_TOKEN_FILE'))
    // Kept only to explain itself: a secret in argv shows in `ps` and shell history.
    .addOption(new Option('--token <token>').hideHelp())
    .addOption(new Option('-o, --output <format>', 'table, wide (more columns) or json').choices(OUTPUT_FORMATS))
    .option('--json', 'same as -o json')
    .addHelpText(
      'after',
      "\nToken: --token-file FILE or HOLDFAST_TOKEN_FILE, else HOLDFAST_TOKEN, else (loopback URLs only)\nthe embedded store's local operator token in $HOLDFAST_DATA_DIR/admin-tokens.json.\n" +
        'Exit: 0 done, 1 failed, 2 usage, 3 nothing changed / not granted, 4 lock or leadership lost (holdfast lock, elect).\n' +
        'Under -o json an error is one line {"error":{"code","message"}} on stderr.',
    );
  const ctx = new CliContext(program);
  registerServer(program);
  registerLock(program, ctx);
  registerElect(program, ctx);
  registerObserve(program, ctx);
  const locks = registerLocks(program, ctx);
  registerLocksTop(locks, () => ctx.api(), (value, human) => ctx.print(value, human));
  registerRevoke(program, ctx);
  registerSessions(program, ctx);
  registerAudit(program, ctx);
  registerPolicies(program, ctx);
  registerStatus(program, ctx);
  registerTokens(program, ctx);
  registerBackup(program, ctx);
  registerVersion(program, ctx);
  registerCompletion(program);
  return { program, ctx };
}
