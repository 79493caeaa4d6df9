/** `holdfast sessions ls|show|kill` (A2, A4; `show` reads A1/A2 pages, as there is no per-session route). */
import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import { CliError, EXIT } from '../exit-codes.js';
import { formatTable, relativeTime, timeAgo } from '../format.js';
import { sortLocks } from '../lock-listing.js';

export function registerSessions(program: Command, ctx: CliContext): Command {
  const sessions = program.command('sessions').description('inspect and kill sessions');

  sessions
    .command('ls')
    .description('list live sessions')
    .option('--limit <n>', 'rows per page', '100')
    .option('--cursor <cursor>', 'continue from a previous page')
    .action(async (opts: { limit: string; cursor?: string }) => {
      const page = await (await ctx.api()).listSessions(opts);
      ctx.print(page, (wide) => {
        const head = ['SESSION', 'OWNER', 'TTL', 'LAST HEARTBEAT', 'EXPIRES', 'LOCKS', ...(wide ? ['CREATED AT', 'EXPIRES AT'] : [])];
        const rows = page.items.map((s) => [
          s.sessionId,
          s.owner,
          `${s.ttlMillis} ms`,
          timeAgo(s.lastHeartbeatAt),
          relativeTime(s.expiresAt),
          String(s.lockCount),
          ...(wide ? [new Date(s.createdAt).toISOString(), new Date(s.expiresAt).toISOString()] : []),
        ]);
        return `${formatTable(head, rows)}${page.nextCursor ? `\nmore: --cursor ${page.nextCursor}` : ''}`;
      });
    });

  sessions
    .command('show <sessionId>')
    .description('show one live session and the locks it holds')
    .action(async (sessionId: string) => {
      const api = await ctx.api();
      const session = (await api.allSessions()).find((s) => s.sessionId === sessionId);
      if (session === undefined) {
        throw new CliError('SESSION_NOT_FOUND', `no live session ${sessionId} (unknown, expired, closed or killed)`);
      }
      const locks = sortLocks((await api.allLocks()).filter((l) => l.sessionId === sessionId), 'key');
      ctx.print({ ...session, locks }, () =>
        [
          formatTable(
            ['FIELD', 'VALUE'],
            [
              ['session', session.sessionId],
              ['owner', session.owner],
              ['ttl', `${session.ttlMillis} ms`],
              ['created', `${new Date(session.createdAt).toISOString()} (${timeAgo(session.createdAt)})`],
              ['last heartbeat', `${new Date(session.lastHeartbeatAt).toISOString()} (${timeAgo(session.lastHeartbeatAt)})`],
              ['expires', `${new Date(session.expiresAt).toISOString()} (${relativeTime(session.expiresAt)})`],
              ['locks', String(session.lockCount)],
            ],
          ),
          '',
          formatTable(
            ['KEY', 'TOKEN', 'EXPIRES', 'WAITERS'],
            locks.map((l) => [l.key, l.fencingToken ?? '', l.expiresAt ? relativeTime(l.expiresAt) : '', String(l.waiterCount)]),
          ),
        ].join('\n'),
      );
    });

  sessions
    .command('kill <sessionId>')
    .description('kill a session and release its locks (operator); audited')
    .requiredOption('--reason <reason>', 'why (recorded in the audit trail)')
    .action(async (sessionId: string, opts: { reason: string }) => {
      const result = await (await ctx.api()).killSession(sessionId, opts.reason);
      ctx.print(result, () =>
        result.outcome === 'KILLED'
          ? `killed ${sessionId}; released ${result.releasedLocks} lock(s); audit entry ${result.auditId}`
          : `nothing killed: ${sessionId} is not a live session; audit entry ${result.auditId}`,
      );
      if (result.outcome !== 'KILLED') process.exitCode = EXIT.unchanged;
    });
  return sessions;
}
