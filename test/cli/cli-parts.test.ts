/** The CLI's pure parts: durations, URL joining under a path prefix, lock filters and orders, -o json detection, the version lookup. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import type { LockInfo } from '../../contract/records.js';
import { joinUrl } from '../../cli/admin-api.js';
import { cliVersion } from '../../cli/cli-version.js';
import { wantsJson } from '../../cli/context.js';
import { parseDuration, parseMillis } from '../../cli/duration.js';
import { relativeTime, timeAgo } from '../../cli/format.js';
import { filterLocks, sortLocks } from '../../cli/lock-listing.js';

describe('durations', () => {
  test('parseDuration reads units and sums compound ones; refuses bare numbers and junk', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('15m')).toBe(900_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('2d')).toBe(172_800_000);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    for (const bad of ['', '15', 'm', '10 minutes', '5x', '1h 30m', '-5m']) expect(() => parseDuration(bad), bad).toThrow(/not a duration/);
  });
  test('parseMillis takes whole milliseconds only', () => {
    expect(parseMillis('2500')).toBe(2500);
    for (const bad of ['2.5', '-1', '1s', '']) expect(() => parseMillis(bad), bad).toThrow(/whole number/);
  });
});

describe('relative times', () => {
  const now = 1_800_000_000_000;
  test('a moment that happened reads "ago", also when the server clock runs slightly ahead (a grant just made is "0s ago", never "in 0s")', () => {
    expect(timeAgo(now - 200, now)).toBe('0s ago');
    expect(timeAgo(now + 400, now)).toBe('0s ago');
    expect(timeAgo(now - 45_000, now)).toBe('45s ago');
    expect(timeAgo(now - 600_000, now)).toBe('10m ago');
    expect(timeAgo(now - 7_200_000, now)).toBe('2h ago');
  });
  test('a moment ahead (an expiry) reads "in", and "ago" once it has passed', () => {
    expect(relativeTime(now + 15_000, now)).toBe('in 15s');
    expect(relativeTime(now - 3_000, now)).toBe('3s ago');
  });
});

describe('joinUrl', () => {
  test('keeps a path prefix, with or without a trailing slash, and the query', () => {
    expect(joinUrl('http://host/holdfast', '/v1/admin/locks?limit=5')).toBe('http://host/holdfast/v1/admin/locks?limit=5');
    expect(joinUrl('http://host/holdfast/', '/readyz')).toBe('http://host/holdfast/readyz');
    expect(joinUrl('http://127.0.0.1:7070', '/v1/locks/a%2Fb')).toBe('http://127.0.0.1:7070/v1/locks/a%2Fb');
  });
});

describe('lock listing', () => {
  const now = 10_000_000;
  const lock = (key: string, owner: string, sessionId: string, ageMillis: number, waiterCount: number): LockInfo => ({
    key,
    held: true,
    owner,
    sessionId,
    fencingToken: '1',
    grantedAt: now - ageMillis,
    expiresAt: now + 30_000,
    holders: [{ sessionId, owner, fencingToken: '1', grantedAt: now - ageMillis, expiresAt: now + 30_000 }],
    waiterCount,
  });
  const locks = [lock('b', 'w1', 's1', 60_000, 0), lock('a', 'w2', 's2', 3_600_000, 1), lock('c', 'w1', 's3', 1_000, 4), lock('d', 'w1', 's1', 60_000, 1)];
  const keys = (list: LockInfo[]) => list.map((l) => l.key);

  test('filters combine: owner, session, held at least --older-than', () => {
    expect(keys(filterLocks(locks, { owner: 'w1' }, now))).toEqual(['b', 'c', 'd']);
    expect(keys(filterLocks(locks, { sessionId: 's1' }, now))).toEqual(['b', 'd']);
    expect(keys(filterLocks(locks, { olderThanMillis: 60_000 }, now))).toEqual(['b', 'a', 'd']);
    expect(keys(filterLocks(locks, { owner: 'w1', olderThanMillis: 60_001 }, now))).toEqual([]);
  });
  test('sort: age oldest first (ties by key), waiters most first (ties oldest first), key', () => {
    expect(keys(sortLocks(locks, 'age'))).toEqual(['a', 'b', 'd', 'c']);
    expect(keys(sortLocks(locks, 'waiters'))).toEqual(['c', 'a', 'd', 'b']);
    expect(keys(sortLocks(locks, 'key'))).toEqual(['a', 'b', 'c', 'd']);
  });
});

test('wantsJson sees -o json in its spellings, not after --', () => {
  for (const argv of [['-o', 'json', 'x'], ['x', '--output', 'json'], ['--output=json'], ['-ojson'], ['--json']]) expect(wantsJson(argv), argv.join(' ')).toBe(true);
  for (const argv of [['-o', 'wide'], ['lock', 'k', '--', 'cmd', '--json'], []]) expect(wantsJson(argv), argv.join(' ')).toBe(false);
});

test('cliVersion walks up to the holdfast package.json, past other packages', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'holdfast-version-'));
  try {
    writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'holdfast', version: '9.8.7' }));
    mkdirSync(path.join(root, 'dist/cli'), { recursive: true });
    writeFileSync(path.join(root, 'dist/package.json'), JSON.stringify({ type: 'module' }));
    expect(cliVersion(path.join(root, 'dist/cli'))).toBe('9.8.7');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
