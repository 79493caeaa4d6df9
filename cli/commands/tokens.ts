/**
 * `holdfast tokens advance`: after a store was restored outside Holdfast (pg_restore, a copied
 * embedded directory), raise its token sequence above every token issued before the restore and
 * let it serve writes again (issue 25; C3 "Restores"). Opens the store directly with the server's
 * own environment; audited as `tokens.advance` by `cli:USER@HOST`.
 */
import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import { CliError } from '../exit-codes.js';
import { storeCliAudit } from '../store-actor.js';

export function registerTokens(program: Command, ctx: CliContext): void {
  const tokens = program.command('tokens').description('the store\'s fencing token sequence');
  tokens
    .command('advance')
    .description(
      'after a restore: raise the token sequence above every token issued before it (to the store clock in microseconds) ' +
        'and serve writes again; opens the store of HOLDFAST_STORE / DATABASE_URL / HOLDFAST_DATA_DIR directly (embedded: with its server stopped); audited',
    )
    .option('--reason <reason>', 'why (recorded in the audit trail)', 'store restored from a backup')
    .action(async (opts: { reason: string }) => {
      const { loadConfig } = await import('../../lock/config.js');
      const { advanceTokens, TokenAdvanceUnsupportedError } = await import('../../lock/store/advance-tokens.js');
      let result;
      try {
        result = await advanceTokens(loadConfig(), storeCliAudit('tokens-advance', opts.reason));
      } catch (error) {
        if (error instanceof TokenAdvanceUnsupportedError) throw new CliError('NOT_SUPPORTED', error.message);
        throw error;
      }
      const { audit, ...rest } = result;
      ctx.print({ ...rest, auditId: audit.id }, () =>
        `advanced the ${result.backend} store: every new fencing token is above ${result.floor} (the last issued was ${result.previous}); ` +
          `writes are served again; audit entry ${audit.id}`,
      );
    });
}
