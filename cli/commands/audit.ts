/**
 * `holdfast audit`: the audit trail (A4) and its hash-chain check; `audit export` (A4x, JSON lines an
 * outsider can re-verify), `audit verify-export FILE` (that re-verification, offline) and
 * `audit prune --before T` (A4p, operator: deletes the oldest entries behind a sealed checkpoint).
 */
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { policyForKey } from '../../contract/policies.js';
import { AUDIT_ACTIONS } from '../../contract/records.js';
import { loadAuditSealer } from '../../lock/audit/audit-key.js';
import { verifyAuditExport, type AuditExportLine } from '../../lock/audit/retention.js';
import type { CliContext } from '../context.js';
import { parseDuration } from '../duration.js';
import { CliError, EXIT } from '../exit-codes.js';
import { formatTable } from '../format.js';

interface AuditOptions {
  verify?: boolean;
  limit: string;
  cursor?: string;
  actor?: string;
  action?: string;
  target?: string;
  policy?: string;
}

/** Store pages read for one `--policy` page at most: the filter is ours, so a sparse policy costs reads, bounded. */
const MAX_PAGES_PER_POLICY_PAGE = 50;

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
    .option('--policy <name>', "only entries about keys under this lock policy (HOLDFAST_POLICIES_FILE's longest-prefix rule)")
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
      const query = { limit: opts.limit, cursor: opts.cursor, actor: opts.actor, action: opts.action, target: opts.target };
      const page = opts.policy === undefined ? await api.listAudit(query) : await auditOfPolicy(api, opts.policy, query);
      ctx.print(page, (wide) =>
        formatTable(
          ['ID', 'AT', 'ACTOR', 'ACTION', 'TARGET', 'TOKEN', 'OUTCOME', 'REASON', ...(wide ? ['REQUEST', 'HASH'] : [])],
          page.items.map((e) => [
            e.id,
            new Date(e.at).toISOString(),
            e.actorScope ? `${e.actor} [${e.actorScope.join(', ')}]` : e.actor,
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

  const audit = program.commands.find((c) => c.name() === 'audit')!;

  audit
    .command('export')
    .description('write the whole kept trail as JSON lines: the checkpoint, every entry with its chain fields, the sealed head')
    .option('--file <file>', 'write here (created owner-only) instead of stdout')
    .action(async (opts: { file?: string }) => {
      const api = await ctx.api();
      const body = Readable.fromWeb((await api.exportAudit()) as WebReadableStream<Uint8Array>);
      await pipeline(body, opts.file ? createWriteStream(opts.file, { mode: 0o600 }) : process.stdout, { end: opts.file !== undefined });
    });

  audit
    .command('verify-export <file>')
    .description('re-verify an export offline, from its checkpoint to its head (with --audit-key-file: the HMACs and the head seal too)')
    .option('--audit-key-file <file>', 'the audit key file (current key first, previous keys after it)')
    .action(async (file: string, opts: { auditKeyFile?: string }) => {
      const text = await readFile(file, 'utf8').catch((error: Error) => {
        throw new CliError('USAGE', `cannot read ${file}: ${error.message}`, EXIT.usage);
      });
      let lines: AuditExportLine[];
      try {
        lines = text.split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line) as AuditExportLine);
      } catch (error) {
        throw new CliError('USAGE', `${file} is not an audit export (JSON lines): ${(error as Error).message}`, EXIT.usage);
      }
      const sealer = opts.auditKeyFile ? await loadAuditSealer(opts.auditKeyFile) : undefined;
      const result = await verifyAuditExport(lines, sealer);
      ctx.print(result, () =>
        result.ok
          ? `audit export verified${sealer ? ' with the audit key' : ' (links only: no audit key given)'}: ${result.entries} entries, head ${result.headHash}`
          : `audit export BROKEN at entry ${result.brokenAt}: ${result.problem}`,
      );
      if (!result.ok) process.exitCode = EXIT.failed;
    });

  audit
    .command('prune')
    .description('delete the entries older than --before behind a sealed checkpoint (operator); audited; export first to keep them')
    .requiredOption('--before <time>', 'an instant (ISO 8601, e.g. 2026-01-01T00:00:00Z) or an age (e.g. 90d: older than 90 days)', parseInstant)
    .requiredOption('--reason <reason>', 'why (recorded in the audit trail)')
    .action(async (opts: { before: number; reason: string }) => {
      const api = await ctx.api();
      const result = await api.pruneAudit(opts.before, opts.reason);
      ctx.print(result, () =>
        result.pruned > 0
          ? `pruned ${result.pruned} entr${result.pruned === 1 ? 'y' : 'ies'} before ${new Date(opts.before).toISOString()}; checkpoint entry ${result.checkpoint.id} (hash ${result.checkpoint.hash}); audit entry ${result.auditId}`
          : `nothing pruned: no entry is older than ${new Date(opts.before).toISOString()}; audit entry ${result.auditId}`,
      );
      if (result.pruned === 0) process.exitCode = EXIT.unchanged;
    });
}

/** `--before`: an ISO 8601 instant, or an age (`90d`) counted back from now. */
function parseInstant(text: string): number {
  if (/^\d+(\.\d+)?(ms|s|m|h|d)/.test(text.trim())) return Date.now() - parseDuration(text);
  const at = Date.parse(text);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text.trim()) || Number.isNaN(at)) {
    throw new InvalidArgumentError(`"${text}" is neither an ISO 8601 instant (2026-01-01T00:00:00Z) nor an age (90d, 12h)`);
  }
  return at;
}

type AdminApi = Awaited<ReturnType<CliContext['api']>>;
type AuditPage = Awaited<ReturnType<AdminApi['listAudit']>>;

/**
 * A4 filtered to entries whose target is a key under `policyName` (by the server's policies, A8, and
 * the one longest-prefix rule): pages are read until `limit` entries match or the trail ends; the
 * cursor continues after the last entry read.
 */
async function auditOfPolicy(
  api: AdminApi,
  policyName: string,
  query: { limit: string; cursor?: string | undefined; actor?: string | undefined; action?: string | undefined; target?: string | undefined },
): Promise<AuditPage> {
  const { items: policies } = await api.policies();
  if (!policies.some((p) => p.name === policyName)) {
    throw new CliError('UNKNOWN_POLICY', `no lock policy ${JSON.stringify(policyName)} on this server (holdfast policies ls)`);
  }
  const limit = Number(query.limit);
  const items: AuditPage['items'] = [];
  let cursor = query.cursor;
  for (let pages = 0; pages < MAX_PAGES_PER_POLICY_PAGE && items.length < limit; pages += 1) {
    const page = await api.listAudit({ ...query, limit: String(limit), cursor });
    for (const entry of page.items) {
      if (entry.action === 'lock.revoke' && policyForKey(policies, entry.target)?.name === policyName) items.push(entry);
    }
    cursor = page.nextCursor ?? undefined;
    if (!cursor) break;
  }
  return { items, nextCursor: cursor ?? null };
}
