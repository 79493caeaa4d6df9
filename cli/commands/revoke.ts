/** `holdfast revoke KEY --reason …`: force-revoke (A3), audited. */
import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';

export function registerRevoke(program: Command, ctx: CliContext): void {
  program
    .command('revoke <key>')
    .description('force-revoke a lock (operator); audited')
    .requiredOption('--reason <reason>', 'why (recorded in the audit trail)')
    .option('--expect-token <token>', 'revoke only if this fencing token still holds')
    .action(async (key: string, opts: { reason: string; expectToken?: string }) => {
      const outcome = await (await ctx.api()).revoke(key, opts.reason, opts.expectToken);
      ctx.print(outcome, () => {
        switch (outcome.outcome) {
          case 'REVOKED':
            return `revoked ${key} (fencing token ${outcome.revokedFencingToken}); audit entry ${outcome.auditId}`;
          case 'NOT_HELD':
            return `nothing revoked: ${key} is not held; audit entry ${outcome.auditId}`;
          default:
            return `nothing revoked: ${key} is now held with a different fencing token than ${opts.expectToken}; audit entry ${outcome.auditId}`;
        }
      });
      if (outcome.outcome !== 'REVOKED') process.exitCode = EXIT.unchanged;
    });
}
