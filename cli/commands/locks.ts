/**
 * `holdfast locks ls|show`: who holds what (A1, L7). v3: a key may have several holders (a semaphore,
 * shared holders): `ls` shows its kind and holders/limit with its lowest-token holder, `show` every holder.
 */
import { Option, type Command } from 'commander';
import type { LockInfo } from '../../contract/records.js';
import { lockKindOf, visibleValue } from '../../contract/wire-rules.js';
import type { CliContext } from '../context.js';
import { parseDuration } from '../duration.js';
import { CliError, EXIT } from '../exit-codes.js';
import { formatTable, relativeTime, timeAgo } from '../format.js';
import { filterLocks, holdersOf, holdersOfLimit, LOCK_SORTS, sortLocks, type LockSort } from '../lock-listing.js';

interface LsOptions {
  prefix?: string;
  limit: string;
  cursor?: string;
  owner?: string;
  session?: string;
  olderThan?: number;
  sort?: LockSort;
}

export function registerLocks(program: Command, ctx: CliContext): Command {
  const locks = program.command('locks').description('inspect held locks');

  locks
    .command('ls')
    .description('list held locks: kind, holders/limit and the lowest-token holder (filters and --sort read every page, then show --limit rows)')
    .option('--prefix <prefix>', 'only keys starting with this')
    .option('--owner <owner>', 'only locks one of whose holders has this owner')
    .option('--session <sessionId>', 'only locks one of whose holders is this session')
    .addOption(new Option('--older-than <duration>', 'only locks held at least this long (90s, 15m, 2h)').argParser(parseDuration))
    .addOption(new Option('--sort <order>', 'age: oldest first; waiters: most first; key').choices(LOCK_SORTS))
    .option('--limit <n>', 'rows', '100')
    .option('--cursor <cursor>', 'continue from a previous page (unfiltered listing only)')
    .action(async (opts: LsOptions) => {
      const api = await ctx.api();
      const filtered = opts.owner !== undefined || opts.session !== undefined || opts.olderThan !== undefined;
      if (opts.cursor !== undefined && (filtered || (opts.sort !== undefined && opts.sort !== 'key'))) {
        throw new CliError('USAGE', '--cursor pages the plain listing; with --owner, --session, --older-than or --sort there are no further pages', EXIT.usage);
      }
      let page: { items: LockInfo[]; nextCursor: string | null };
      if (!filtered && opts.sort !== 'waiters') {
        // The plain listing pages by key; sort=age is A1's own page of the oldest grants (one store scan).
        page = await api.listLocks({ prefix: opts.prefix, limit: opts.limit, cursor: opts.cursor, ...(opts.sort === 'age' ? { sort: 'age' as const } : {}) });
      } else {
        const now = Date.now();
        const matching = filterLocks(await api.allLocks(opts.prefix), { owner: opts.owner, sessionId: opts.session, olderThanMillis: opts.olderThan }, now);
        page = { items: sortLocks(matching, opts.sort ?? 'key').slice(0, Number(opts.limit)), nextCursor: null };
      }
      const now = Date.now();
      ctx.print(page, (wide) => {
        // KIND and HOLDERS (v3) come last, after every column scripts already read by position (wide's too).
        const head = ['KEY', 'OWNER', 'SESSION', 'TOKEN', 'GRANTED', 'EXPIRES', 'WAITERS', ...(wide ? ['GRANTED AT', 'EXPIRES AT'] : []), 'KIND', 'HOLDERS'];
        // OWNER … EXPIRES: the holder with the lowest token (the oldest grant); `locks show KEY` lists every one.
        const rows = page.items.map((l) => [
          l.key,
          l.owner ?? '',
          l.sessionId ?? '',
          l.fencingToken ?? '',
          l.grantedAt ? timeAgo(l.grantedAt, now) : '',
          l.expiresAt ? relativeTime(l.expiresAt, now) : '',
          String(l.waiterCount),
          ...(wide ? [iso(l.grantedAt), iso(l.expiresAt)] : []),
          lockKindOf(l),
          holdersOfLimit(l),
        ]);
        return `${formatTable(head, rows)}${page.nextCursor ? `\nmore: --cursor ${page.nextCursor}` : ''}`;
      });
    });

  locks
    .command('show <key>')
    .description('show one lock (LockInfo): its kind and every holder with token, owner, session and value')
    .action(async (key: string) => {
      const info = await (await ctx.api()).readLock(key);
      ctx.print(info, () => (info.held ? describeHeld(info) : `${info.key}: not held (waiters: ${info.waiterCount})`));
    });
  return locks;
}

/**
 * A held key: one holder as FIELD/VALUE rows (a mutex, as before v3); several (a semaphore's permits,
 * shared holders) as the key's rows and then a table of every holder, lowest token (oldest grant) first.
 */
function describeHeld(info: LockInfo): string {
  const holders = holdersOf(info);
  const kindRows = [
    ['kind', lockKindOf(info)],
    ['holders', holdersOfLimit(info)],
  ];
  const only = holders.length === 1 ? holders[0]! : undefined;
  if (only !== undefined) {
    return formatTable(
      ['FIELD', 'VALUE'],
      [
        ['key', info.key],
        ['held', 'yes'],
        ...kindRows,
        ['owner', only.owner],
        ['session', only.sessionId],
        ['fencing token', only.fencingToken],
        // A value is anyone's text: escaped, so it cannot write terminal control sequences.
        ...(only.value !== undefined ? [['value', visibleValue(only.value)]] : []),
        ['granted', `${iso(only.grantedAt)} (${timeAgo(only.grantedAt)})`],
        ['expires', `${iso(only.expiresAt)} (${relativeTime(only.expiresAt)})`],
        ['waiters', String(info.waiterCount)],
      ],
    );
  }
  const now = Date.now();
  const summary = formatTable(['FIELD', 'VALUE'], [['key', info.key], ['held', 'yes'], ...kindRows, ['waiters', String(info.waiterCount)]]);
  const table = formatTable(
    ['TOKEN', 'OWNER', 'SESSION', 'GRANTED', 'EXPIRES', 'VALUE'],
    holders.map((h) => [
      h.fencingToken,
      h.owner,
      h.sessionId,
      `${iso(h.grantedAt)} (${timeAgo(h.grantedAt, now)})`,
      relativeTime(h.expiresAt, now),
      h.value === undefined ? '' : visibleValue(h.value),
    ]),
  );
  return `${summary}\n\n${table}`;
}

function iso(at: number | undefined): string {
  return at === undefined ? '' : new Date(at).toISOString();
}
