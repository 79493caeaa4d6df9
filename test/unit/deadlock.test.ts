/**
 * The deadlock detector as a pure function over a wait-for graph: no false positive on
 * acyclic patterns, every cycle broken at its youngest wait, bounded work on long chains.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chooseDeadlockVictims, findCycle } from '../../lock/core/deadlock.js';

interface Edge {
  waitId: string;
  sessionId: string;
  holderSessionId: string;
  key: string;
  startedAt: number;
}

/**
 * A random wait pattern without cycles: sessions are ranked, and a session only waits for
 * a key held by a session ranked after it (several waits per session, parallel edges allowed).
 */
const acyclicPattern = fc
  .record({
    sessions: fc.integer({ min: 2, max: 40 }),
    waits: fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat({ max: 10_000 })), { maxLength: 120 }),
    order: fc.nat(),
  })
  .map(({ sessions, waits, order }) => {
    // A shuffled ranking, so the acyclic order is not the order of the ids.
    const rank = Array.from({ length: sessions }, (_, i) => `s${(i * 7919 + order) % 100_003}`);
    const edges: Edge[] = [];
    waits.forEach(([x, y, at], i) => {
      const a = x % sessions;
      const b = y % sessions;
      if (a === b) return;
      const [from, to] = a < b ? [a, b] : [b, a];
      edges.push({ waitId: `w${i}`, sessionId: rank[from]!, holderSessionId: rank[to]!, key: `k${to}`, startedAt: at });
    });
    return edges;
  });

describe('deadlock detector', () => {
  it('finds no cycle and chooses no victim in 1,000 seeded random acyclic wait patterns', () => {
    fc.assert(
      fc.property(acyclicPattern, (edges) => {
        expect(findCycle(edges)).toBeNull();
        expect(chooseDeadlockVictims(edges)).toEqual([]);
      }),
      { numRuns: 1000, seed: 11 },
    );
  });

  it('breaks every cycle added to a random acyclic pattern at the youngest wait of the cycle it reports', () => {
    fc.assert(
      fc.property(acyclicPattern, fc.integer({ min: 2, max: 6 }), fc.nat(), (edges, length, salt) => {
        // A ring of fresh sessions closed on top of the pattern.
        const ring: Edge[] = Array.from({ length }, (_, i) => ({
          waitId: `r${i}`,
          sessionId: `ring${i}`,
          holderSessionId: `ring${(i + 1) % length}`,
          key: `rk${(i + 1) % length}`,
          startedAt: 20_000 + ((i * 31 + salt) % 997),
        }));
        const all = [...edges, ...ring];
        const verdicts = chooseDeadlockVictims(all);
        expect(verdicts).toHaveLength(1);
        const youngest = [...ring].sort((a, b) => b.startedAt - a.startedAt || (a.waitId < b.waitId ? 1 : -1))[0]!;
        expect(verdicts[0]!.waitId).toBe(youngest.waitId);
        expect(new Set(verdicts[0]!.sessions)).toEqual(new Set(ring.map((e) => e.sessionId)));
        expect(new Set(verdicts[0]!.keys)).toEqual(new Set(ring.map((e) => e.key)));
        const removed = new Set(verdicts.map((v) => v.waitId));
        expect(findCycle(all.filter((e) => !removed.has(e.waitId)))).toBeNull();
      }),
      { numRuns: 300, seed: 12 },
    );
  });

  it('two cycles sharing a session are both broken, one victim each', () => {
    const e = (waitId: string, sessionId: string, holderSessionId: string, startedAt: number) => ({
      waitId,
      sessionId,
      holderSessionId,
      key: `held-by-${holderSessionId}`,
      startedAt,
    });
    const edges = [e('a', 's1', 's2', 1), e('b', 's2', 's1', 5), e('c', 's1', 's3', 2), e('d', 's3', 's1', 9)];
    expect(chooseDeadlockVictims(edges).map((v) => v.waitId).sort()).toEqual(['b', 'd']);
  });

  it('a 10,000-session chain closed into one cycle is found without recursion; the step budget bounds a check', () => {
    const n = 10_000;
    const edges = Array.from({ length: n }, (_, i) => ({
      waitId: `w${String(i).padStart(5, '0')}`,
      sessionId: `s${i}`,
      holderSessionId: `s${(i + 1) % n}`,
      key: `k${(i + 1) % n}`,
      startedAt: i,
    }));
    const verdicts = chooseDeadlockVictims(edges);
    expect(verdicts.map((v) => v.waitId)).toEqual([`w${String(n - 1).padStart(5, '0')}`]);
    expect(verdicts[0]!.sessions).toHaveLength(n);
    // With too few steps to walk the ring, a check gives up (the next check continues) rather than run unbounded.
    expect(chooseDeadlockVictims(edges, { maxSteps: 100, maxVictims: 10 })).toEqual([]);
  });
});
