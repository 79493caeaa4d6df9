/** `holdfast revoke KEY --reason …`: force-revoke (A3), audited. */
import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';

export function registerRevoke(program: Command, ctx: CliContext): void {
  program
    .command('revoke <key>')
    .description('force-revoke a lock (operator): the grant --expect-token names (one permit of a semaphore, one shared holder), else the lowest-token one; audited')
    .requiredOption('--reason <reason>', 'why (recorded in the audit trail)')
    .option('--expect-token <token>', 'revoke the grant with this fencing token, only if it still holds')
    .action(async (key: string, opts: { reason: string; expectToken?: string }) => {
      const outcome = await (await ctx.api()).revoke(key, opts.reason, opts.expectToken);
      ctx.print(outcome, () => {
        switch (outcome.outcome) {
          case 'REVOKED':
            return `revoked ${key} (fencing token ${outcome.revokedFencingToken}); audit entry ${outcome.auditId}`;
          case 'NOT_HELD':
            return `nothing revoked: ${key} is not held; audit entry ${outcome.auditId}`;
          default:
            // A semaphore or shared key has several holders: none of them holds with the expected token now.
            return `nothing revoked: no holder of ${key} has fencing token ${opts.expectToken} now (that grant ended; others hold the key); audit entry ${outcome.auditId}`;
        }
      });
      if (outcome.outcome !== 'REVOKED') process.exitCode = EXIT.unchanged;
    });
}
