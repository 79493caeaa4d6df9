/**
 * Issue 23 (console): how a lock's holders, kind and leadership are read from LockInfo, how an
 * untrusted value is shown, and the leaders page's paging over A1 (a stub A1 here, with A1's
 * cursor semantics: the cursor is the last key returned, the next page starts after it).
 */
import { describe, expect, it } from 'vitest';
import type { LockHolder, LockInfo, Page } from '../../app/lib/api-types.js';
import { holdersOf, holdersOfLimit, leadershipOf, lockKind, type LockInfoRead } from '../../app/lib/lock-holders.js';
import { previewValue, visibleMultilineValue, visibleValue } from '../../app/lib/lock-value.js';
import { leadersPage, MAX_ROUNDS, SCAN_PAGE } from '../../app/lib/server/leaders-page.js';

function holder(token: number, value?: string): LockHolder {
  return {
    sessionId: `s-${token}`,
    owner: `owner-${token}`,
    fencingToken: String(token),
    grantedAt: 1_000 + token,
    expiresAt: 60_000 + token,
    ...(value === undefined ? {} : { value }),
  };
}

function held(key: string, holders: LockHolder[], mode: 'exclusive' | 'shared' = 'exclusive', limit = 1): LockInfo {
  const first = holders[0]!;
  return {
    key,
    held: true,
    sessionId: first.sessionId,
    owner: first.owner,
    fencingToken: first.fencingToken,
    grantedAt: first.grantedAt,
    expiresAt: first.expiresAt,
    waiterCount: 0,
    holders,
    mode,
    limit,
  };
}

describe('lockKind', () => {
  it('is mutex for exclusive limit 1, semaphore for exclusive limit > 1, shared for shared', () => {
    expect(lockKind({ mode: 'exclusive', limit: 1 })).toBe('mutex');
    expect(lockKind({ mode: 'exclusive', limit: 3 })).toBe('semaphore');
    expect(lockKind({ mode: 'shared', limit: 1 })).toBe('shared');
  });
  it('reads a lock from a server before v3 (no mode, no limit) as the mutex it was', () => {
    expect(lockKind({})).toBe('mutex');
  });
});

describe('holdersOf and holdersOfLimit', () => {
  it('lists every holder as the server sent them, and counts them against the limit', () => {
    const lock = held('k', [holder(7), holder(9), holder(12)], 'exclusive', 3);
    expect(holdersOf(lock).map((h) => h.fencingToken)).toEqual(['7', '9', '12']);
    expect(holdersOfLimit(lock)).toBe('3/3');
    expect(holdersOfLimit(held('m', [holder(4)]))).toBe('1/1');
  });
  it('gives shared holders as a count only (readers have no count limit)', () => {
    expect(holdersOfLimit(held('r', [holder(1), holder(2)], 'shared'))).toBe('2');
  });
  it('makes the single-holder fields the one holder when the server sends no holders (before v3)', () => {
    const old: LockInfoRead = { key: 'k', held: true, sessionId: 's', owner: 'o', fencingToken: '5', grantedAt: 10, expiresAt: 20, waiterCount: 0 };
    expect(holdersOf(old)).toEqual([{ sessionId: 's', owner: 'o', fencingToken: '5', grantedAt: 10, expiresAt: 20 }]);
    expect(holdersOfLimit(old)).toBe('1/1');
    expect(holdersOf({ key: 'free', held: false, waiterCount: 2 })).toEqual([]);
  });
});

describe('leadershipOf', () => {
  it('is the mutex holder with a value, its term the holder token', () => {
    const leadership = leadershipOf(held('election/db', [holder(42, '10.0.0.7:5432')]));
    expect(leadership).toEqual({ key: 'election/db', term: '42', leader: holder(42, '10.0.0.7:5432') });
  });
  it('counts an empty value as a value (the holder set one)', () => {
    expect(leadershipOf(held('e', [holder(3, '')]))?.leader.value).toBe('');
  });
  it('is null for a mutex without a value, a free key, a semaphore or shared holders with values', () => {
    expect(leadershipOf(held('plain', [holder(1)]))).toBeNull();
    expect(leadershipOf({ key: 'free', held: false, waiterCount: 0, holders: [] })).toBeNull();
    expect(leadershipOf(held('sem', [holder(1, 'a'), holder(2, 'b')], 'exclusive', 2))).toBeNull();
    expect(leadershipOf(held('rw', [holder(1, 'a')], 'shared'))).toBeNull();
  });
});

describe('lock values are shown as text with invisible characters made visible', () => {
  it('writes control and bidi characters as escapes on one line', () => {
    expect(visibleValue('a\nb\tc\r')).toBe('a\\nb\\tc\\r');
    expect(visibleValue('invoice\u202Efdp.exe')).toBe('invoice\\u{202e}fdp.exe');
    expect(visibleValue('\u0000\u001b[31m\u2066x\u2069')).toBe('\\u{0}\\u{1b}[31m\\u{2066}x\\u{2069}');
    expect(visibleValue('<b>bold</b> & "quoted" ünïcödé 🦀')).toBe('<b>bold</b> & "quoted" ünïcödé 🦀');
  });
  it('keeps line breaks in the full view, escaping the rest', () => {
    expect(visibleMultilineValue('line 1\nline 2\r\n\u202Eend\t')).toBe('line 1\nline 2\r\n\\u{202e}end\\t');
  });
  it('cuts a long value at a code point boundary and says so', () => {
    const emoji = '🦀'.repeat(100);
    const preview = previewValue(emoji, 80);
    expect(preview.cut).toBe(true);
    expect(preview.codePoints).toBe(100);
    expect(Array.from(preview.text)).toHaveLength(81);
    expect(preview.text.endsWith('🦀…')).toBe(true);
    expect(previewValue('short', 80)).toEqual({ text: 'short', cut: false, codePoints: 5 });
    expect(previewValue('x'.repeat(80), 80).cut).toBe(false);
  });
});

/** A1 over `locks` (sorted by key): its cursor is the last key returned. */
function stubA1(locks: LockInfo[]) {
  const calls: { limit: number; cursor: string | undefined }[] = [];
  const read = async (limit: number, cursor: string | undefined): Promise<Page<LockInfo>> => {
    calls.push({ limit, cursor });
    const start = cursor === undefined ? 0 : locks.findIndex((l) => l.key > cursor);
    const from = start < 0 ? locks.length : start;
    const items = locks.slice(from, from + limit);
    const last = from + items.length >= locks.length;
    return { items, nextCursor: last ? null : items[items.length - 1]!.key };
  };
  return { read, calls };
}

function keyed(n: number): string {
  return `k/${String(n).padStart(6, '0')}`;
}

async function everyPage(read: Parameters<typeof leadersPage>[0], limit: number): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await leadersPage(read, limit, cursor);
    pages.push(page.items.map((l) => l.key));
    if (page.nextCursor === null) return pages;
    cursor = page.nextCursor;
  }
}

describe('leadersPage', () => {
  it('pages through every leadership once, in key order, with no page over its limit', async () => {
    // 2,000 locks, every 7th an election: dense enough that a scan page holds more than a leaders page needs.
    const locks = Array.from({ length: 2_000 }, (_, i) => held(keyed(i), [holder(i + 1, i % 7 === 0 ? `v${i}` : undefined)]));
    const expected = locks.filter((_, i) => i % 7 === 0).map((l) => l.key);
    const { read } = stubA1(locks);
    const pages = await everyPage(read, 25);
    expect(pages.flat()).toEqual(expected);
    expect(pages.every((p) => p.length <= 25)).toBe(true);
    expect(pages.slice(0, -1).every((p) => p.length === 25)).toBe(true);
  });

  it('finds a few leaders among many locks in whole A1 pages, and answers a short page after MAX_ROUNDS', async () => {
    const total = SCAN_PAGE * (MAX_ROUNDS + 2);
    const leaderAt = new Set([3, SCAN_PAGE * 2 + 1, total - 1]);
    const locks = Array.from({ length: total }, (_, i) => held(keyed(i), [holder(i + 1, leaderAt.has(i) ? 'here' : undefined)]));
    const { read, calls } = stubA1(locks);
    const first = await leadersPage(read, 50, undefined);
    expect(first.items.map((l) => l.key)).toEqual([keyed(3), keyed(SCAN_PAGE * 2 + 1)]);
    expect(calls).toHaveLength(MAX_ROUNDS);
    expect(calls.every((c) => c.limit === SCAN_PAGE)).toBe(true);
    expect(first.scanned).toBe(SCAN_PAGE * MAX_ROUNDS);
    expect(first.nextCursor).not.toBeNull();
    const second = await leadersPage(read, 50, first.nextCursor!);
    expect(second.items.map((l) => l.key)).toEqual([keyed(total - 1)]);
    expect(second.nextCursor).toBeNull();
  });

  it('skips plain mutexes, semaphores and shared locks', async () => {
    const locks = [
      held('a', [holder(1, 'leader-a')]),
      held('b', [holder(2)]),
      held('c', [holder(3, 'x'), holder(4, 'y')], 'exclusive', 2),
      held('d', [holder(5, 'r')], 'shared'),
      held('e', [holder(6, '<script>alert(1)</script>')]),
    ];
    const page = await leadersPage(stubA1(locks).read, 50, undefined);
    expect(page.items.map((l) => [l.key, l.term, l.leader.value])).toEqual([
      ['a', '1', 'leader-a'],
      ['e', '6', '<script>alert(1)</script>'],
    ]);
    expect(page.nextCursor).toBeNull();
  });
});
