import { expect, test } from 'vitest';
import { LockHistory, type LockHistoryEvent } from '../../lock/core/lock-history.js';

const event = (key: string, n: number, kind: LockHistoryEvent['kind'] = 'granted'): LockHistoryEvent => ({
  at: n,
  kind,
  key,
  sessionId: `s${n}`,
  fencingToken: String(n),
});

test('answers one key, newest first, up to the limit', () => {
  const history = new LockHistory(100);
  history.record(event('a', 1));
  history.record(event('b', 2));
  history.record(event('a', 3, 'released'));
  history.record(event('a', 4));
  expect(history.forKey('a', 10).map((e) => e.fencingToken)).toEqual(['4', '3', '1']);
  expect(history.forKey('a', 2).map((e) => e.fencingToken)).toEqual(['4', '3']);
  expect(history.forKey('missing', 10)).toEqual([]);
});

test('bounded: the oldest events leave first, whatever the number of keys', () => {
  const history = new LockHistory(5);
  for (let i = 1; i <= 12; i++) history.record(event(i % 2 ? 'odd' : 'even', i));
  // Only events 8..12 remain.
  expect(history.forKey('odd', 10).map((e) => e.at)).toEqual([11, 9]);
  expect(history.forKey('even', 10).map((e) => e.at)).toEqual([12, 10, 8]);
});
