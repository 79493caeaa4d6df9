/**
 * The most contended keys (A7) in memory that does not grow with the number of
 * keys: space-saving counters (Metwally, Agrawal, El Abbadi 2005) per time slice,
 * a ring of slices for the sliding window, and a pure merge of summaries that
 * serves both the window (slices of one instance) and the fleet (summaries that
 * instances publish).
 *
 * Every summary, single or merged, keeps these bounds (f = the true count):
 * - an entry's `count - error <= f(key) <= count`;
 * - a key that is not an entry has `f(key) <= floor`;
 * - `floor <= total / capacity`, so any key contended more than total/capacity
 *   times is always an entry (the heavy hitters are never lost);
 * - with at most `capacity` distinct keys, `floor` is 0 and every count is exact.
 */

export interface TopKEntry {
  key: string;
  /** Upper bound of the true count. */
  count: number;
  /** `count - error` is a lower bound of the true count. */
  error: number;
}

/** A serialisable summary: what a slice holds, what the window answers, what an instance would publish. */
export interface TopKSummary {
  capacity: number;
  /** Events offered (the stream length N). */
  total: number;
  /** Upper bound of the count of any key that is not an entry. */
  floor: number;
  /** Unordered. */
  entries: TopKEntry[];
}

/**
 * One space-saving summary: at most `capacity` counters in an indexed binary
 * min-heap on count, so an offer is O(log capacity) whatever the number of keys.
 */
export class SpaceSaving {
  private readonly keys: string[] = [];
  private readonly counts: number[] = [];
  private readonly errors: number[] = [];
  private readonly position = new Map<string, number>();
  private offered = 0;
  private evicted = false;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity must be a positive integer');
  }

  offer(key: string, by = 1): void {
    this.offered += by;
    const at = this.position.get(key);
    if (at !== undefined) {
      this.counts[at]! += by;
      this.siftDown(at);
      return;
    }
    if (this.keys.length < this.capacity) {
      this.keys.push(key);
      this.counts.push(by);
      this.errors.push(0);
      this.position.set(key, this.keys.length - 1);
      this.siftUp(this.keys.length - 1);
      return;
    }
    // Full: the new key takes over the smallest counter and inherits its count as possible error.
    const min = this.counts[0]!;
    this.position.delete(this.keys[0]!);
    this.keys[0] = key;
    this.counts[0] = min + by;
    this.errors[0] = min;
    this.position.set(key, 0);
    this.evicted = true;
    this.siftDown(0);
  }

  get size(): number {
    return this.keys.length;
  }

  snapshot(): TopKSummary {
    return {
      capacity: this.capacity,
      total: this.offered,
      // Until a counter was taken over, every key ever offered is an entry with its exact count.
      floor: this.evicted ? this.counts[0]! : 0,
      entries: this.keys.map((key, i) => ({ key, count: this.counts[i]!, error: this.errors[i]! })),
    };
  }

  private siftUp(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.counts[parent]! <= this.counts[i]!) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private siftDown(i: number): void {
    const n = this.keys.length;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < n && this.counts[left]! < this.counts[smallest]!) smallest = left;
      if (right < n && this.counts[right]! < this.counts[smallest]!) smallest = right;
      if (smallest === i) return;
      this.swap(i, smallest);
      i = smallest;
    }
  }

  private swap(a: number, b: number): void {
    [this.keys[a], this.keys[b]] = [this.keys[b]!, this.keys[a]!];
    [this.counts[a], this.counts[b]] = [this.counts[b]!, this.counts[a]!];
    [this.errors[a], this.errors[b]] = [this.errors[b]!, this.errors[a]!];
    this.position.set(this.keys[a]!, a);
    this.position.set(this.keys[b]!, b);
  }
}

/**
 * Merges summaries into one of `capacity` entries (the mergeable-summaries
 * construction of Agarwal et al. 2012, Misra–Gries form): each key is ranked by
 * what it has above the floors, the `capacity` best are kept, and the floor
 * rises by the best rank that was dropped. Pure; order of the inputs does not matter.
 */
export function mergeTopK(summaries: readonly TopKSummary[], capacity: number): TopKSummary {
  const floorSum = summaries.reduce((sum, s) => sum + s.floor, 0);
  const merged = new Map<string, { aboveFloor: number; lower: number; upperPresent: number; floorsPresent: number }>();
  for (const summary of summaries) {
    for (const entry of summary.entries) {
      let m = merged.get(entry.key);
      if (!m) merged.set(entry.key, (m = { aboveFloor: 0, lower: 0, upperPresent: 0, floorsPresent: 0 }));
      m.aboveFloor += entry.count - summary.floor;
      m.lower += entry.count - entry.error;
      m.upperPresent += entry.count;
      m.floorsPresent += summary.floor;
    }
  }
  const ranked = [...merged].sort(([ka, a], [kb, b]) => b.aboveFloor - a.aboveFloor || (ka < kb ? -1 : ka > kb ? 1 : 0));
  const dropped = ranked.length > capacity ? ranked[capacity]![1].aboveFloor : 0;
  const floor = floorSum + dropped;
  return {
    capacity,
    total: summaries.reduce((sum, s) => sum + s.total, 0),
    floor,
    entries: ranked.slice(0, capacity).map(([key, m]) => {
      // Where a summary did not have the key, it may still have seen it up to its floor.
      const count = m.upperPresent + (floorSum - m.floorsPresent);
      return { key, count, error: count - m.lower };
    }),
  };
}

/** Entries most contended first (upper bound, then lower bound, then key for a stable order). */
export function rankEntries(summary: TopKSummary, limit: number): TopKEntry[] {
  return [...summary.entries]
    .sort((a, b) => b.count - a.count || a.error - b.error || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .slice(0, limit);
}

export interface ContentionTopOptions {
  /** Counters per slice. */
  capacity?: number;
  /** The sliding window. */
  windowMillis?: number;
  /** Slices in the window: the window slides by windowMillis / slices. */
  slices?: number;
}

export const DEFAULT_CONTENTION_TOP = { capacity: 1024, windowMillis: 60_000, slices: 6 } as const;

/**
 * Contended attempts per key over a sliding window, on this instance: a ring
 * of space-saving slices. Memory is at most capacity × slices counters.
 */
export class ContentionTop {
  readonly capacity: number;
  readonly windowMillis: number;
  private readonly sliceMillis: number;
  private readonly ring: { index: number; summary: SpaceSaving }[];

  constructor(
    private readonly now: () => number,
    options: ContentionTopOptions = {},
  ) {
    this.capacity = options.capacity ?? DEFAULT_CONTENTION_TOP.capacity;
    this.windowMillis = options.windowMillis ?? DEFAULT_CONTENTION_TOP.windowMillis;
    const slices = options.slices ?? DEFAULT_CONTENTION_TOP.slices;
    if (!Number.isInteger(slices) || slices < 1) throw new RangeError('slices must be a positive integer');
    this.sliceMillis = this.windowMillis / slices;
    this.ring = Array.from({ length: slices }, () => ({ index: -1, summary: new SpaceSaving(this.capacity) }));
  }

  record(key: string): void {
    const index = Math.floor(this.now() / this.sliceMillis);
    const slot = this.ring[index % this.ring.length]!;
    if (slot.index !== index) {
      slot.index = index;
      slot.summary = new SpaceSaving(this.capacity);
    }
    slot.summary.offer(key);
  }

  /**
   * This instance's summary of the window: the slices younger than the window, merged.
   * The window is whole slices, so it covers between windowMillis − one slice and windowMillis.
   */
  summary(): TopKSummary {
    const current = Math.floor(this.now() / this.sliceMillis);
    const live = this.ring.filter((slot) => slot.index > current - this.ring.length && slot.index <= current);
    return mergeTopK(
      live.map((slot) => slot.summary.snapshot()),
      this.capacity,
    );
  }

  top(limit: number): TopKEntry[] {
    return rankEntries(this.summary(), limit);
  }
}
