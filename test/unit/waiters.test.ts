import { expect, test } from 'vitest';
import { WaiterRegistry } from '../../lock/core/waiters.js';

test('counts waiters per key and in total', () => {
  const registry = new WaiterRegistry();
  const a = registry.register('k', 's1', 'h');
  registry.register('k', 's2', 'h');
  registry.register('j', 's3', 'h');
  expect(registry.count('k')).toBe(2);
  expect(registry.total()).toBe(3);
  registry.unregister(a);
  expect(registry.count('k')).toBe(1);
  expect(registry.count('missing')).toBe(0);
});

test('a release that lands before the wait begins is not lost', async () => {
  const registry = new WaiterRegistry();
  const waiter = registry.register('k', 's1', null);
  const seen = waiter.releasesSeen;
  registry.keyReleased('k'); // between the failed try and the wait
  let woke = false;
  await waiter.releasedSince(seen, new AbortController().signal).then(() => (woke = true));
  expect(woke).toBe(true);
});

test('a session end aborts every waiter of that session only', () => {
  const registry = new WaiterRegistry();
  const mine = registry.register('k', 's1', null);
  const other = registry.register('k', 's2', null);
  registry.sessionEnded('s1');
  expect(mine.sessionEnded.signal.aborted).toBe(true);
  expect(other.sessionEnded.signal.aborted).toBe(false);
});

test('deadlock cycles in the wait-for graph', () => {
  const registry = new WaiterRegistry();
  registry.register('b', 'A', 'B'); // A waits for B
  expect(registry.deadlockCycles()).toBe(0);
  registry.register('a', 'B', 'A'); // B waits for A: a cycle
  expect(registry.deadlockCycles()).toBe(1);
  registry.register('x', 'C', 'D');
  registry.register('y', 'D', 'E');
  registry.register('z', 'E', 'C'); // a second, three-session cycle
  expect(registry.deadlockCycles()).toBe(2);
});

test('a release wakes the longest-waiting waiter only', async () => {
  const registry = new WaiterRegistry();
  const first = registry.register('k', 's1', null);
  const second = registry.register('k', 's2', null);
  const [seenFirst, seenSecond] = [first.releasesSeen, second.releasesSeen];
  registry.keyReleased('k');
  expect(first.releasesSeen).toBe(seenFirst + 1);
  expect(second.releasesSeen).toBe(seenSecond);
  registry.unregister(first);
  registry.keyReleased('k');
  expect(second.releasesSeen).toBe(seenSecond + 1);
});
