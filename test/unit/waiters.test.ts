import { expect, test } from 'vitest';
import { WaiterRegistry, countCycles, type Waiter } from '../../lock/core/waiters.js';

/** A waiter whose session the store has checked (it counts), waiting on `holder`. */
function admitted(registry: WaiterRegistry, key: string, sessionId: string, holder: string | null): Waiter {
  const waiter = registry.register(key, sessionId);
  waiter.holderSessionId = holder;
  registry.admit(waiter);
  return waiter;
}


test('counts waiters per key and in total', () => {
  const registry = new WaiterRegistry();
  const a = admitted(registry, 'k', 's1', 'h');
  admitted(registry, 'k', 's2', 'h');
  admitted(registry, 'j', 's3', 'h');
  expect(registry.count('k')).toBe(2);
  expect(registry.total()).toBe(3);
  registry.unregister(a);
  expect(registry.count('k')).toBe(1);
  expect(registry.count('missing')).toBe(0);
});

test('a release that lands before the wait begins is not lost', async () => {
  const registry = new WaiterRegistry();
  const waiter = admitted(registry, 'k', 's1', null);
  const seen = waiter.releasesSeen;
  registry.keyReleased('k'); // between the failed try and the wait
  let woke = false;
  await waiter.releasedSince(seen, new AbortController().signal).then(() => (woke = true));
  expect(woke).toBe(true);
});

test('a session end aborts every waiter of that session only', () => {
  const registry = new WaiterRegistry();
  const mine = admitted(registry, 'k', 's1', null);
  const other = admitted(registry, 'k', 's2', null);
  registry.sessionEnded('s1');
  expect(mine.sessionHasEnded).toBe(true);
  expect(other.sessionHasEnded).toBe(false);
});

test('one interruption signal per wait tells its three causes apart', async () => {
  const registry = new WaiterRegistry();
  const ended = admitted(registry, 'k', 's1', null);
  const victim = admitted(registry, 'k', 's2', null);
  const left = admitted(registry, 'k', 's3', null);
  // A park wakes when the wait is interrupted, whichever the cause.
  const parked = ended.releasedSince(ended.releasesSeen, ended.interrupted);
  registry.sessionEnded('s1');
  await parked;
  expect(ended.interrupted.aborted).toBe(true);
  expect(ended.sessionHasEnded).toBe(true);
  expect(ended.deadlock).toBeNull();

  const first = { sessions: ['s2', 'h'], keys: ['k', 'j'] };
  victim.breakDeadlock(first);
  victim.breakDeadlock({ sessions: ['other'], keys: ['x'] }); // a later verdict does not rewrite the first
  expect(victim.interrupted.aborted).toBe(true);
  expect(victim.deadlock).toEqual(first);
  expect(victim.sessionHasEnded).toBe(false);

  const reason = new Error('client went away');
  left.callerLeft(reason);
  expect(left.interrupted.reason).toBe(reason);
  expect(left.sessionHasEnded).toBe(false);
  expect(left.deadlock).toBeNull();
});

test('deadlock cycles in the wait-for graph', () => {
  const registry = new WaiterRegistry();
  admitted(registry, 'b', 'A', 'B'); // A waits for B
  expect(registry.deadlockCycles()).toBe(0);
  admitted(registry, 'a', 'B', 'A'); // B waits for A: a cycle
  expect(registry.deadlockCycles()).toBe(1);
  admitted(registry, 'x', 'C', 'D');
  admitted(registry, 'y', 'D', 'E');
  admitted(registry, 'z', 'E', 'C'); // a second, three-session cycle
  expect(registry.deadlockCycles()).toBe(2);
});

test('a release wakes the longest-waiting waiter only', async () => {
  const registry = new WaiterRegistry();
  const first = admitted(registry, 'k', 's1', null);
  const second = admitted(registry, 'k', 's2', null);
  const [seenFirst, seenSecond] = [first.releasesSeen, second.releasesSeen];
  registry.keyReleased('k');
  expect(first.releasesSeen).toBe(seenFirst + 1);
  expect(second.releasesSeen).toBe(seenSecond);
  registry.unregister(first);
  registry.keyReleased('k');
  expect(second.releasesSeen).toBe(seenSecond + 1);
});

test('the cycle search is iterative: 10,000 sessions waiting in one chain do not overflow, closing it is one cycle', () => {
  const registry = new WaiterRegistry();
  const n = 10_000;
  // s0 waits on k1 held by s1, s1 on k2 held by s2, ... : a chain of waits.
  for (let i = 0; i < n - 1; i++) admitted(registry, `k${i + 1}`, `s${i}`, `s${i + 1}`);
  expect(registry.deadlockCycles()).toBe(0);
  // The last one waits on what s0 holds: one cycle of 10,000 sessions.
  admitted(registry, 'k0', `s${n - 1}`, 's0');
  expect(registry.deadlockCycles()).toBe(1);
});

test('countCycles finds separate cycles and self-loops, not mere chains', () => {
  const edges = new Map<string, Set<string>>([
    ['a', new Set(['b'])],
    ['b', new Set(['a', 'c'])],
    ['c', new Set(['d'])],
    ['d', new Set(['d'])],
    ['e', new Set(['a'])],
  ]);
  expect(countCycles(edges)).toBe(2);
});

test('a release announced twice (locally, then by the release feed) wakes one waiter, in FIFO order', async () => {
  const registry = new WaiterRegistry();
  const parkAll = new AbortController();
  const waiters = ['s1', 's2', 's3'].map((s) => admitted(registry, 'k', s, 'holder'));
  const woke: string[] = [];
  const park = (w: (typeof waiters)[number]) => void w.releasedSince(w.releasesSeen, parkAll.signal).then(() => woke.push(w.sessionId));
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  waiters.forEach(park);
  const seen = waiters.map((w) => w.releasesSeen);
  registry.keyReleased('k'); // the releasing instance wakes its own waiter at once
  registry.keyReleased('k'); // the same release again, from the feed
  await settle();
  expect(woke).toEqual(['s1']);
  // The woken waiter took both announcements: if its try fails it tries again at once.
  expect(waiters.map((w, i) => w.releasesSeen - seen[i]!)).toEqual([2, 0, 0]);
  // Its tries lost to a barger, it parks again: still first in line, the next release is its.
  park(waiters[0]!);
  registry.keyReleased('k');
  await settle();
  expect(woke).toEqual(['s1', 's1']);
  // Granted, it leaves; the next release goes to s2, not s3.
  registry.unregister(waiters[0]!);
  registry.keyReleased('k');
  await settle();
  expect(woke).toEqual(['s1', 's1', 's2']);
});

test('a waiter not yet admitted (its session token unchecked) is woken by releases but counts for nothing', async () => {
  const registry = new WaiterRegistry();
  const pending = registry.register('k', 'victim');
  pending.holderSessionId = 'holder';
  expect(registry.count('k')).toBe(0);
  expect(registry.total()).toBe(0);
  expect(registry.countForSession('victim')).toBe(0);
  expect(registry.snapshot()).toEqual([]);
  expect(registry.all()).toEqual([]);
  const seen = pending.releasesSeen;
  registry.keyReleased('k');
  expect(pending.releasesSeen).toBe(seen + 1);
  registry.admit(pending);
  expect([registry.count('k'), registry.total(), registry.countForSession('victim')]).toEqual([1, 1, 1]);
  registry.unregister(pending);
  registry.admit(pending); // admitting after it left does not bring it back
  expect(registry.total()).toBe(0);
});

test('a session that ends stops its waits whose first try is still under way, and a release goes to an admitted waiter first', () => {
  const registry = new WaiterRegistry();
  const trying = registry.register('k', 's1'); // not admitted yet: its first try is in flight
  const unchecked = registry.register('k', 'forger');
  const admittedWaiter = admitted(registry, 'k', 's2', 'holder');
  registry.sessionEnded('s1');
  expect(trying.sessionHasEnded).toBe(true);
  const seen = [unchecked.releasesSeen, admittedWaiter.releasesSeen];
  registry.keyReleased('k'); // none parked: the admitted one, not the first registered, is told
  expect([unchecked.releasesSeen, admittedWaiter.releasesSeen]).toEqual([seen[0], seen[1]! + 1]);
});
