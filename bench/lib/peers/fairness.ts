/**
 * Fairness figures of a contended cell, from the order in which grants came back.
 *
 * Under mutual exclusion, the grant before this one on the same key went to the worker that
 * has just released it, so "won by the last releaser" is "the same worker as the key's
 * previous grant". A system that lets the releaser straight back in (it asks again at once
 * while the others sleep or poll) scores near 100 %; a queue scores near 0 %.
 */

export interface Grant {
  key: string;
  worker: number;
  /** Granted inside the measured window (earlier grants only serve as predecessors). */
  measured: boolean;
}

export interface LastReleaserShare {
  /** Measured grants that had a predecessor on their key. */
  counted: number;
  /** …of which went to that predecessor's worker. */
  toLastReleaser: number;
  /** toLastReleaser ÷ counted; NaN when nothing was counted. */
  share: number;
}

/** `grants` in the order they were granted (across keys: only the order within a key matters). */
export function lastReleaserShare(grants: readonly Grant[]): LastReleaserShare {
  const previous = new Map<string, number>();
  let counted = 0;
  let toLastReleaser = 0;
  for (const grant of grants) {
    const before = previous.get(grant.key);
    if (grant.measured && before !== undefined) {
      counted += 1;
      if (before === grant.worker) toLastReleaser += 1;
    }
    previous.set(grant.key, grant.worker);
  }
  return { counted, toLastReleaser, share: counted === 0 ? Number.NaN : toLastReleaser / counted };
}

export interface WinSpread {
  min: number;
  max: number;
}

/** Measured grants per worker, over every worker 0 … workers-1 (one that never won counts 0). */
export function winSpread(grants: readonly Grant[], workers: number): WinSpread {
  const wins = new Array<number>(workers).fill(0);
  for (const grant of grants) if (grant.measured) wins[grant.worker] = (wins[grant.worker] ?? 0) + 1;
  return workers === 0 ? { min: 0, max: 0 } : { min: Math.min(...wins), max: Math.max(...wins) };
}
