/**
 * `holdfast`: run the server, or operate a running one over its HTTP API
 * (what the runbooks tell on-call to type). Human tables by default, `--json`
 * for scripts; exit 0 on success, 1 on failure, 3 when an admin action changed
 * nothing (NOT_HELD, TOKEN_MISMATCH, NOT_FOUND).
 */
import { Command, Option } from 'commander';
import { AdminApi, ApiError } from './admin-api.js';
import { chooseToken } from './credentials.js';
import { formatTable, relativeTime } from './format.js';
import { registerLocksTop } from './commands/locks-top.js';

const program = new Command()
  .name('holdfast')
  .description('Holdfast: a distributed lock service with fencing tokens')
  .showHelpAfterError()
  .addOption(new Option('--url <url>', 'lock server URL').env('HOLDFAST_URL').default('http://127.0.0.1:7070'))
  .addOption(new Option('--token-file <file>', 'file whose first line is the admin bearer token').env('HOLDFAST_TOKEN_FILE'))
  // Kept only to explain itself: a secret in argv shows in `ps` and shell history.
  .addOption(new Option('--token <token>').hideHelp())
  .option('--json', 'print JSON for scripts')
  .addHelpText(
    'after',
    '\nAdmin token: --token-file FILE or HOLDFAST_TOKEN_FILE, else HOLDFAST_TOKEN, else (loopback URLs only)\nthe embedded store\'s local operator token in $HOLDFAST_DATA_DIR/admin-tokens.json.',
  );

program
  .command('server')
  .description('run the lock server (configured by HOLDFAST_* environment variables)')
  .action(async () => {
    const { runServer } = await import('./run-server.js');
    await runServer();
  });

const locks = program.command('locks').description('inspect held locks');
locks
  .command('ls')
  .description('list held locks')
  .option('--prefix <prefix>', 'only keys starting with this')
  .option('--limit <n>', 'rows per page', '100')
  .option('--cursor <cursor>', 'continue from a previous page')
  .addOption(new Option('--sort <order>', 'key (pages by key) or age (the oldest grants first, one page)').choices(['key', 'age']))
  .action(async (opts: { prefix?: string; limit: string; cursor?: string; sort?: string }) => {
    const page = await (await api()).listLocks(opts);
    output(page, () => {
      const rows = page.items.map((l) => [
        l.key,
        l.owner ?? '',
        l.sessionId ?? '',
        l.fencingToken ?? '',
        l.grantedAt ? relativeTime(l.grantedAt) : '',
        l.expiresAt ? relativeTime(l.expiresAt) : '',
        String(l.waiterCount),
      ]);
      return `${formatTable(['KEY', 'OWNER', 'SESSION', 'TOKEN', 'GRANTED', 'EXPIRES', 'WAITERS'], rows)}${page.nextCursor ? `\nmore: --cursor ${page.nextCursor}` : ''}`;
    });
  });

locks
  .command('show <key>')
  .description('show one lock (LockInfo)')
  .action(async (key: string) => {
    const info = await (await api()).readLock(key);
    output(info, () =>
      info.held
        ? formatTable(
            ['FIELD', 'VALUE'],
            [
              ['key', info.key],
              ['held', 'yes'],
              ['owner', info.owner ?? ''],
              ['session', info.sessionId ?? ''],
              ['fencing token', info.fencingToken ?? ''],
              ['granted', info.grantedAt ? `${new Date(info.grantedAt).toISOString()} (${relativeTime(info.grantedAt)})` : ''],
              ['expires', info.expiresAt ? `${new Date(info.expiresAt).toISOString()} (${relativeTime(info.expiresAt)})` : ''],
              ['waiters', String(info.waiterCount)],
            ],
          )
        : `${info.key}: not held (waiters: ${info.waiterCount})`,
    );
  });

registerLocksTop(locks, api, output);

program
  .command('revoke <key>')
  .description('force-revoke a lock (operator); audited')
  .requiredOption('--reason <reason>', 'why (recorded in the audit trail)')
  .option('--expect-token <token>', 'revoke only if this fencing token still holds')
  .action(async (key: string, opts: { reason: string; expectToken?: string }) => {
    const outcome = await (await api()).revoke(key, opts.reason, opts.expectToken);
    output(outcome, () => {
      switch (outcome.outcome) {
        case 'REVOKED':
          return `revoked ${key} (fencing token ${outcome.revokedFencingToken}); audit entry ${outcome.auditId}`;
        case 'NOT_HELD':
          return `nothing revoked: ${key} is not held; audit entry ${outcome.auditId}`;
        default:
          return `nothing revoked: ${key} is now held with a different fencing token than ${opts.expectToken}; audit entry ${outcome.auditId}`;
      }
    });
    if (outcome.outcome !== 'REVOKED') process.exitCode = 3;
  });

const sessions = program.command('sessions').description('inspect and kill sessions');
sessions
  .command('ls')
  .description('list live sessions')
  .option('--limit <n>', 'rows per page', '100')
  .option('--cursor <cursor>', 'continue from a previous page')
  .action(async (opts: { limit: string; cursor?: string }) => {
    const page = await (await api()).listSessions(opts);
    output(page, () => {
      const rows = page.items.map((s) => [
        s.sessionId,
        s.owner,
        `${s.ttlMillis} ms`,
        relativeTime(s.lastHeartbeatAt),
        relativeTime(s.expiresAt),
        String(s.lockCount),
      ]);
      return `${formatTable(['SESSION', 'OWNER', 'TTL', 'LAST HEARTBEAT', 'EXPIRES', 'LOCKS'], rows)}${page.nextCursor ? `\nmore: --cursor ${page.nextCursor}` : ''}`;
    });
  });

sessions
  .command('kill <sessionId>')
  .description('kill a session and release its locks (operator); audited')
  .requiredOption('--reason <reason>', 'why (recorded in the audit trail)')
  .action(async (sessionId: string, opts: { reason: string }) => {
    const result = await (await api()).killSession(sessionId, opts.reason);
    output(result, () =>
      result.outcome === 'KILLED'
        ? `killed ${sessionId}; released ${result.releasedLocks} lock(s); audit entry ${result.auditId}`
        : `nothing killed: ${sessionId} is not a live session; audit entry ${result.auditId}`,
    );
    if (result.outcome !== 'KILLED') process.exitCode = 3;
  });

program
  .command('audit')
  .description('show the audit trail, newest first')
  .option('--verify', 'verify the hash chain; exit 1 and name the first broken entry if it does not hold')
  .option('--limit <n>', 'rows', '50')
  .option('--cursor <cursor>', 'continue from a previous page')
  .option('--actor <name>', 'only this actor')
  .option('--target <keyOrSession>', 'only entries about this key or session')
  .action(async (opts: { verify?: boolean; limit: string; cursor?: string; actor?: string; target?: string }) => {
    const client = await api();
    if (opts.verify) {
      const result = await client.verifyAudit();
      output(result, () =>
        result.ok
          ? `audit chain verified: ${result.entries} entries, head ${result.headHash}`
          : `audit chain BROKEN at entry ${result.brokenAt}: ${result.problem}`,
      );
      if (!result.ok) process.exitCode = 1;
      return;
    }
    const page = await client.listAudit(opts);
    output(page, () =>
      formatTable(
        ['ID', 'AT', 'ACTOR', 'ACTION', 'TARGET', 'TOKEN', 'OUTCOME', 'REASON'],
        page.items.map((e) => [
          e.id,
          new Date(e.at).toISOString(),
          e.actor,
          e.action,
          e.target,
          e.fencingToken ?? '',
          e.outcome,
          e.reason,
        ]),
      ) + (page.nextCursor ? `\nmore: --cursor ${page.nextCursor}` : ''),
    );
  });

/** Set when the local operator token was not sent because HOLDFAST_URL is not loopback. */
let withheldLocalToken: string | undefined;

async function api(): Promise<AdminApi> {
  const { url, token, tokenFile } = program.opts<{ url: string; token?: string; tokenFile?: string }>();
  if (token !== undefined) {
    throw new Error(
      '--token is no longer accepted: a token on the command line shows in `ps` and shell history. ' +
        'Put it in a file and pass --token-file FILE (or HOLDFAST_TOKEN_FILE=FILE), or set HOLDFAST_TOKEN',
    );
  }
  const choice = await chooseToken({
    url,
    tokenFile,
    envToken: process.env.HOLDFAST_TOKEN,
    dataDir: process.env.HOLDFAST_DATA_DIR,
  });
  if (choice.token === undefined) withheldLocalToken = choice.withheldLocalToken;
  return new AdminApi(url, choice.token);
}

function output(value: unknown, human: () => string): void {
  console.log(program.opts<{ json?: boolean }>().json ? JSON.stringify(value, null, 2) : human());
}

program.parseAsync().catch((error: unknown) => {
  if (error instanceof ApiError) {
    console.error(`holdfast: ${error.status} ${error.code}: ${error.message}`);
    if (error.status === 401 && withheldLocalToken !== undefined) {
      console.error(
        `holdfast: the local operator token in ${withheldLocalToken} is only sent to loopback URLs; ` +
          'for this server set HOLDFAST_TOKEN_FILE (or HOLDFAST_TOKEN)',
      );
    }
  } else {
    console.error(`holdfast: ${(error as Error).message}`);
  }
  process.exitCode = 1;
});
