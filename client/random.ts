/**
 * Random sources for backoff jitter. A source returns a float in [0, 1).
 *
 * Each LockClient owns its own source (never a shared global), so one
 * client's draws cannot shift another's, and a seeded source replays a whole
 * run: the seeded simulation prints the seed of any failing schedule.
 */
import { randomBytes } from 'node:crypto';

export type RandomSource = () => number;

/**
 * A small, fast, seedable PRNG (mulberry32). Not cryptographic — jitter only
 * needs to decorrelate waiters, not resist prediction.
 */
export function seededRandom(seed: number): RandomSource {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A fresh per-client source seeded from the OS; distinct clients never share a sequence. */
export function freshRandom(): RandomSource {
  return seededRandom(randomBytes(4).readUInt32LE(0));
}
