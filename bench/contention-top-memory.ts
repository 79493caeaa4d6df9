/**
 * Heap held by the contention top-K (A7) after contended attempts on 100 to
 * 1,000,000 distinct keys: once the counters are full the figure must stay flat.
 *
 *   node --expose-gc --import tsx bench/contention-top-memory.ts
 *
 * Each scenario builds a fresh ContentionTop in the default shape (1,024 counters
 * per slice, 6 slices over 60 s), offers ATTEMPTS contended attempts spread over
 * the whole window (so every slice fills), and reports heap used after a full GC
 * minus the heap before it was built. Keys are 40-byte paths like real lock keys.
 */
import { ContentionTop, DEFAULT_CONTENTION_TOP } from '../lock/core/contention-top.js';

const ATTEMPTS = 1_200_000;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error('run with node --expose-gc --import tsx bench/contention-top-memory.ts');
  process.exit(2);
}

function heapUsed(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

function keyName(i: number): string {
  return `payouts/eu/merchant-${String(i).padStart(19, '0')}`;
}

function scenario(distinctKeys: number) {
  let now = 0;
  const before = heapUsed();
  const top = new ContentionTop(() => now);
  const started = process.hrtime.bigint();
  for (let i = 0; i < ATTEMPTS; i++) {
    now = Math.floor((i / ATTEMPTS) * DEFAULT_CONTENTION_TOP.windowMillis);
    // Zipf-ish skew: every 10th attempt on one of 10 hot keys, the rest spread over all keys.
    top.record(i % 10 === 0 ? keyName(i % 100 % 10) : keyName((i * 7919) % distinctKeys));
  }
  const offerNanos = Number(process.hrtime.bigint() - started) / ATTEMPTS;
  const queryStarted = process.hrtime.bigint();
  const first = top.top(5);
  const queryMillis = Number(process.hrtime.bigint() - queryStarted) / 1e6;
  const held = heapUsed() - before;
  const entries = top.summary().entries.length;
  // Keep `top` alive until after the measurement.
  return { distinctKeys, heldBytes: held, windowEntries: entries, offerNanos, queryMillis, topKey: first[0]?.key ?? '-', keep: top };
}

scenario(1_000); // warms the JIT
const rows = [100, 10_000, 100_000, 1_000_000].map(scenario);
console.log(`contention top-K memory (capacity ${DEFAULT_CONTENTION_TOP.capacity} × ${DEFAULT_CONTENTION_TOP.slices} slices, ${ATTEMPTS} attempts, Node ${process.version})`);
console.log('distinct keys | heap held (KiB) | entries in window | offer (ns) | top(5) query (ms) | hottest');
for (const r of rows) {
  console.log(
    `${String(r.distinctKeys).padStart(13)} | ${(r.heldBytes / 1024).toFixed(0).padStart(15)} | ${String(r.windowEntries).padStart(17)} | ${r.offerNanos.toFixed(0).padStart(10)} | ${r.queryMillis.toFixed(2).padStart(17)} | ${r.topKey}`,
  );
}
