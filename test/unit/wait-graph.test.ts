import { expect, test } from 'vitest';
import { findCycles } from '../../lock/core/wait-graph.js';
import { WaiterRegistry, type Waiter } from '../../lock/core/waiters.js';

/** A waiter whose session the store has checked (it counts), waiting on `holder`. */
function admitted(registry: WaiterRegistry, key: string, sessionId: string, holder: string | null): Waiter {
  const waiter = registry.register(key, sessionId);
  waiter.holderSessionId = holder;
  registry.admit(waiter);
  return waiter;
}


test('a chain has no cycle; closing it makes one with every session in it', () => {
  const chain = [
    { waiterSessionId: 'A', key: 'k1', holderSessionId: 'B' },
    { waiterSessionId: 'B', key: 'k2', holderSessionId: 'C' },
  ];
  expect(findCycles(chain)).toEqual([]);
  expect(findCycles([...chain, { waiterSessionId: 'C', key: 'k3', holderSessionId: 'A' }])).toEqual([['A', 'B', 'C']]);
});

test('separate cycles are reported apart; unknown holders are not edges', () => {
  const waits = [
    { waiterSessionId: 'B', key: 'x', holderSessionId: 'A' },
    { waiterSessionId: 'A', key: 'y', holderSessionId: 'B' },
    { waiterSessionId: 'D', key: 'z', holderSessionId: 'C' },
    { waiterSessionId: 'C', key: 'w', holderSessionId: 'D' },
    { waiterSessionId: 'E', key: 'v', holderSessionId: null },
    { waiterSessionId: 'F', key: 'u', holderSessionId: 'F' },
  ];
  expect(findCycles(waits)).toEqual([['A', 'B'], ['C', 'D'], ['F']]);
});

test('the registry lists its waits and agrees with its own cycle count', () => {
  const registry = new WaiterRegistry();
  admitted(registry, 'b', 'A', 'B');
  const w = admitted(registry, 'a', 'B', 'A');
  admitted(registry, 'c', 'C', null);
  expect(registry.snapshot()).toEqual(
    expect.arrayContaining([
      { waiterSessionId: 'A', key: 'b', holderSessionId: 'B' },
      { waiterSessionId: 'B', key: 'a', holderSessionId: 'A' },
      { waiterSessionId: 'C', key: 'c', holderSessionId: null },
    ]),
  );
  expect(findCycles(registry.snapshot()).length).toBe(registry.deadlockCycles());
  registry.unregister(w);
  expect(registry.snapshot()).toHaveLength(2);
  expect(findCycles(registry.snapshot())).toEqual([]);
});

test('a wait for a key that admits several holders is listed, marked, and closes no cycle', () => {
  const waits = [
    { waiterSessionId: 'A', key: 'mutex', holderSessionId: 'B' },
    { waiterSessionId: 'B', key: 'pool', holderSessionId: 'A', holderKind: 'semaphore' as const },
    { waiterSessionId: 'B', key: 'pool', holderSessionId: 'C', holderKind: 'semaphore' as const },
  ];
  expect(findCycles(waits)).toEqual([]);
  // The same loop through a mutex is a deadlock.
  expect(findCycles([waits[0]!, { waiterSessionId: 'B', key: 'pool', holderSessionId: 'A' }])).toEqual([['A', 'B']]);

  const registry = new WaiterRegistry();
  admitted(registry, 'mutex', 'A', 'B');
  const permitWait = admitted(registry, 'pool', 'B', 'A');
  permitWait.holderKind = 'shared';
  expect(registry.snapshot()).toEqual(
    expect.arrayContaining([
      { waiterSessionId: 'A', key: 'mutex', holderSessionId: 'B' },
      { waiterSessionId: 'B', key: 'pool', holderSessionId: 'A', holderKind: 'shared' },
    ]),
  );
  expect(registry.deadlockCycles()).toBe(0);
  permitWait.holderKind = undefined;
  expect(registry.deadlockCycles()).toBe(1);
});
