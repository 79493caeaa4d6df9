/**
 * Issue 26: `prefixes` on token entries — validated at load, naming the entry (empty list, a
 * prefix the lock-key rule refuses, two entries of one name with different scopes), kept in NFC;
 * the lookups the HTTP surface and the core use; and the list helpers of lock/http/key-scope.ts
 * (the store prefixes that list exactly a scope, and a filtered page that neither skips nor repeats).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Page } from '../../contract/records.js';
import { AdminTokens } from '../../lock/admin-tokens.js';
import { filteredPage, scopedPrefixes } from '../../lock/http/key-scope.js';

const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-scopes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const tokensFile = (entries: object[]) => {
  const name = path.join(dir, `t${files++}.json`);
  writeFileSync(name, JSON.stringify(entries), { mode: 0o600 });
  return name;
};
const strong = () => randomBytes(24).toString('hex');

describe('prefixes on token entries', () => {
  it('a scoped entry identifies with its prefixes (NFC), an unscoped one without; prefixesOf answers by name, [] for a name not in the file', async () => {
    const scoped = strong();
    const unscoped = strong();
    const tokens = await AdminTokens.fromFile(
      tokensFile([
        { name: 'team-a', token: scoped, role: 'client', prefixes: ['team-a/', 'cafe\u0301/'] },
        { name: 'ops', token: unscoped, role: 'operator' },
      ]),
    );
    expect(tokens.identify(scoped)).toEqual({ name: 'team-a', role: 'client', prefixes: ['team-a/', 'caf\u00e9/'] });
    expect(tokens.identify(unscoped)).toEqual({ name: 'ops', role: 'operator' });
    expect(tokens.prefixesOf('team-a')).toEqual(['team-a/', 'caf\u00e9/']);
    expect(tokens.prefixesOf('ops')).toBeUndefined();
    expect(tokens.prefixesOf('gone')).toEqual([]);
  });

  it.each([
    ['an empty list', [], /entry|prefixes/],
    ['a control character', ['team-a/\u0007'], /entry 1 \("bad", viewer\): prefixes\[0\].*control characters/],
    ['a zero-width space', ['team\u200b-a/'], /entry 1 \("bad", viewer\): prefixes\[0\].*invisible/],
    ['an empty prefix', [''], /entry 1 \("bad", viewer\): prefixes\[0\].*1–512 bytes/],
    ['a prefix over 512 bytes', ['x'.repeat(513)], /entry 1 \("bad", viewer\): prefixes\[0\].*1–512 bytes/],
  ])('refuses %s, naming the entry', async (_what, prefixes, message) => {
    const file = tokensFile([
      { name: 'ops', token: strong(), role: 'operator' },
      { name: 'bad', token: strong(), role: 'viewer', prefixes },
    ]);
    await expect(AdminTokens.fromFile(file)).rejects.toThrow(message);
  });

  it('refuses two entries of one name with different prefixes (sessions remember the name)', async () => {
    const file = tokensFile([
      { name: 'team', token: strong(), role: 'client', prefixes: ['a/'] },
      { name: 'team', token: strong(), role: 'client', prefixes: ['b/'] },
    ]);
    await expect(AdminTokens.fromFile(file)).rejects.toThrow(/entry 1 \("team", client\): another entry of this name has other prefixes/);
  });
});

describe('scopedPrefixes', () => {
  it('narrows each scope prefix by the request, drops nested ones, and orders them bytewise', () => {
    expect(scopedPrefixes(['team-a/', 'shared/a-'])).toEqual(['shared/a-', 'team-a/']);
    expect(scopedPrefixes(['team-a/', 'shared/a-'], 'shared/')).toEqual(['shared/a-']);
    expect(scopedPrefixes(['team-a/'], 'team-a/jobs/')).toEqual(['team-a/jobs/']);
    expect(scopedPrefixes(['team-a/'], 'team-b/')).toEqual([]);
    expect(scopedPrefixes(['a/', 'a/b/', 'b'])).toEqual(['a/', 'b']);
    // Bytewise, as the stores order keys: U+FF5E sorts before U+1F600 in UTF-8, after it in UTF-16.
    expect(scopedPrefixes(['\u{1F600}', '\uFF5E'])).toEqual(['\uFF5E', '\u{1F600}']);
    expect(scopedPrefixes([])).toEqual([]);
  });
});

describe('filteredPage', () => {
  /** A list of 0..n-1 paged like a store: the cursor is the last item's position. */
  const numbers = (n: number) => async (limit: number, cursor: string | undefined): Promise<Page<number>> => {
    const start = cursor === undefined ? 0 : Number(cursor) + 1;
    const items = Array.from({ length: Math.max(0, Math.min(limit, n - start)) }, (_, i) => start + i);
    return { items, nextCursor: start + items.length < n ? String(items.at(-1)) : null };
  };

  it('pages through only the kept items, none skipped or repeated, whatever the page size', async () => {
    const keep = (x: number) => x % 7 === 0 || x % 11 === 0;
    const expected = Array.from({ length: 300 }, (_, i) => i).filter(keep);
    for (const limit of [1, 2, 5, 100, 1000]) {
      const seen: number[] = [];
      let cursor: string | undefined;
      do {
        const page = await filteredPage(numbers(300), keep, limit, cursor);
        expect(page.items.length).toBeLessThanOrEqual(limit);
        seen.push(...page.items);
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      expect(seen).toEqual(expected);
    }
  });
});
