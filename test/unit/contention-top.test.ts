import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { ContentionTop, mergeTopK, rankEntries, SpaceSaving, type TopKSummary } from '../../lock/core/contention-top.js';

function trueCounts(stream: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const key of stream) counts.set(key, (counts.get(key) ?? 0) + 1);
  return counts;
}

function summarise(stream: readonly string[], capacity: number): TopKSummary {
  const ss = new SpaceSaving(capacity);
  for (const key of stream) ss.offer(key);
  return ss.snapshot();
}

/** The bounds every summary promises (module header), checked against the true counts. */
function expectBounds(summary: TopKSummary, truth: Map<string, number>) {
  const n = [...truth.values()].reduce((a, b) => a + b, 0);
  expect(summary.total).toBe(n);
  expect(summary.entries.length).toBeLessThanOrEqual(summary.capacity);
  expect(summary.floor * summary.capacity).toBeLessThanOrEqual(n);
  const present = new Set(summary.entries.map((e) => e.key));
  for (const entry of summary.entries) {
    const f = truth.get(entry.key) ?? 0;
    expect(entry.count).toBeGreaterThanOrEqual(f);
    expect(entry.count - entry.error).toBeLessThanOrEqual(f);
    expect(entry.error).toBeLessThanOrEqual(summary.floor);
  }
  for (const [key, f] of truth) {
    if (!present.has(key)) expect(f).toBeLessThanOrEqual(summary.floor);
    // Heavy hitters: contended more than N/K times → always reported.
    if (f * summary.capacity > n) expect(present.has(key)).toBe(true);
  }
}

// Skewed streams: a few hot keys among many cold ones, the shape contention has.
const keyArb = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('hot/a', 'hot/b', 'hot/c') },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 200 }).map((i) => `cold/${i}`) },
);
const streamArb = fc.array(keyArb, { maxLength: 600 });

describe('SpaceSaving', () => {
  test('with at most K distinct keys the counts are exact', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 32 }), fc.array(fc.nat(1000), { maxLength: 400 }), (k, raw) => {
        const stream = raw.map((i) => `k${i % k}`); // at most k distinct keys
        const summary = summarise(stream, k);
        const truth = trueCounts(stream);
        expect(summary.floor).toBe(0);
        expect(new Map(summary.entries.map((e) => [e.key, e.count]))).toEqual(truth);
        for (const e of summary.entries) expect(e.error).toBe(0);
      }),
    );
  });

  test('bounds and heavy hitters hold with more distinct keys than counters', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 16 }), streamArb, (k, stream) => {
        expectBounds(summarise(stream, k), trueCounts(stream));
      }),
    );
  });

  test('memory is the counters, not the keys: size never exceeds capacity', () => {
    const ss = new SpaceSaving(8);
    for (let i = 0; i < 10_000; i++) ss.offer(`key-${i}`);
    expect(ss.size).toBe(8);
    expect(ss.snapshot().total).toBe(10_000);
  });
});

describe('mergeTopK (sum of summaries: slices of the window, instances of the fleet)', () => {
  test('merging keeps the bounds and the heavy hitters of the whole stream', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 16 }), fc.array(streamArb, { minLength: 1, maxLength: 5 }), (k, streams) => {
        const merged = mergeTopK(
          streams.map((s) => summarise(s, k)),
          k,
        );
        expectBounds(merged, trueCounts(streams.flat()));
      }),
    );
  });

  test('merges of merges keep the bounds (instances publishing windows of slices)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.array(streamArb, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 3 }),
        (k, fleets) => {
          const perInstance = fleets.map((slices) => mergeTopK(slices.map((s) => summarise(s, k)), k));
          expectBounds(mergeTopK(perInstance, k), trueCounts(fleets.flat(2)));
        },
      ),
    );
  });

  test('exact when the union has at most K keys, and the order of inputs does not matter', () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.nat(9).map((i) => `k${i}`), { maxLength: 100 }), { minLength: 1, maxLength: 4 }), (streams) => {
        const summaries = streams.map((s) => summarise(s, 10));
        const merged = mergeTopK(summaries, 10);
        expect(merged.floor).toBe(0);
        expect(new Map(merged.entries.map((e) => [e.key, e.count]))).toEqual(trueCounts(streams.flat()));
        expect(rankEntries(mergeTopK([...summaries].reverse(), 10), 10)).toEqual(rankEntries(merged, 10));
      }),
    );
  });
});

describe('ContentionTop (sliding window)', () => {
  test('ranks by contended attempts, most first', () => {
    const top = new ContentionTop(() => 1_000_000);
    for (let i = 0; i < 3; i++) top.record('cold');
    for (let i = 0; i < 30; i++) top.record('hot');
    expect(top.top(10)).toEqual([
      { key: 'hot', count: 30, error: 0 },
      { key: 'cold', count: 3, error: 0 },
    ]);
    expect(top.top(1).map((e) => e.key)).toEqual(['hot']);
  });

  test('forgets what is older than the window, slice by slice', () => {
    let now = 0;
    const top = new ContentionTop(() => now, { windowMillis: 60_000, slices: 6 });
    top.record('old');
    now = 30_000;
    top.record('mid');
    now = 59_999; // still in the window
    expect(top.top(10).map((e) => e.key).sort()).toEqual(['mid', 'old']);
    now = 60_000; // the first slice has left the window
    expect(top.top(10).map((e) => e.key)).toEqual(['mid']);
    now = 95_000;
    expect(top.top(10)).toEqual([]);
    // A slot reused by a later slice starts from zero.
    top.record('new');
    expect(top.top(10)).toEqual([{ key: 'new', count: 1, error: 0 }]);
  });

  test('memory stays bounded with many distinct keys', () => {
    let now = 0;
    const top = new ContentionTop(() => now, { capacity: 16, windowMillis: 6_000, slices: 6 });
    for (let i = 0; i < 50_000; i++) {
      now = i; // 50 s: the ring wraps many times
      top.record(`k${i}`);
      if (i % 7 === 0) top.record('hot');
    }
    const summary = top.summary();
    expect(summary.entries.length).toBeLessThanOrEqual(16);
    expect(top.top(1)[0]!.key).toBe('hot');
  });
});
