/** `holdfast audit`: the audit trail (A5) and its hash-chain check. */
import { Option, type Command } from 'commander';
import { AUDIT_ACTIONS } from '../../contract/records.js';
import type { CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { formatTable } from '../format.js';

interface AuditOptions {
  verify?: boolean;
  limit: string;
  cursor?: string;
  actor?: string;
  action?: string;
  target?: string;
}

export function registerAudit(program: Command, ctx: CliContext): void {
  program
    .command('audit')
    .description('show the audit trail, newest first')
    .option('--verify', 'verify the hash chain; exit 1 and name the first broken entry if it does not hold')
    .option('--limit <n>', 'rows', '50')
    .option('--cursor <cursor>', 'continue from a previous page')
    .option('--actor <name>', 'only this actor (token name)')
    .addOption(new Option('--action <action>', 'only this action').choices(AUDIT_ACTIONS))
    .option('--target <keyOrSession>', 'only entries about this key or session')
    .action(async (opts: AuditOptions) => {
      const api = await ctx.api();
      if (opts.verify) {
        const result = await api.verifyAudit();
        ctx.print(result, () =>
          result.ok
            ? `audit chain verified: ${result.entries} entries, head ${result.headHash}`
            : `audit chain BROKEN at entry ${result.brokenAt}: ${result.problem}`,
        );
        if (!result.ok) process.exitCode = EXIT.failed;
        return;
      }
      const page = await api.listAudit({ limit: opts.limit, cursor: opts.cursor, actor: opts.actor, action: opts.action, target: opts.target });
      ctx.print(page, (wide) =>
        formatTable(
          ['ID', 'AT', 'ACTOR', 'ACTION', 'TARGET', 'TOKEN', 'OUTCOME', 'REASON', ...(wide ? ['REQUEST', 'HASH'] : [])],
          page.items.map((e) => [
            e.id,
            new Date(e.at).toISOString(),
            e.actor,
            e.action,
            e.target,
            e.fencingToken ?? '',
            e.outcome,
            e.reason,
            ...(wide ? [e.requestId, e.hash] : []),
          ]),
        ) + (page.nextCursor ? `\nmore: --cursor ${page.nextCursor}` : ''),
      );
    });
}
