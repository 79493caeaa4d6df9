/**
 * Lock values and leaders (SPEC v3 "coordination primitives", issue 23): what
 * the SDK reads of a grant's `value` and of LockInfo's `holders`, once.
 *
 * A leader is the holder of an election key (a plain exclusive key): its term
 * is its fencing token, so a resource fenced on that token refuses a deposed
 * leader's late writes.
 */
import { ValidationError } from './errors.js';
import { highestHolderToken, MAX_LOCK_VALUE_BYTES, type FencingToken, type LockGrant, type LockInfo } from './wire.js';

/** The current leader of an election key, as `client.observe` yields it. */
export interface Leader {
  owner: string;
  /** The leader's value (its address, say); absent when it set none. */
  value?: string;
  /** The leader's fencing token: strictly increasing from one leader to the next. */
  term: FencingToken;
}

/** A lock value is a string of at most MAX_LOCK_VALUE_BYTES of UTF-8 (contract C3): else ValidationError, nothing sent. */
export function validateValue(value: unknown): string {
  if (typeof value !== 'string') throw new ValidationError(`a lock value must be a string, got ${typeof value}`);
  if (new TextEncoder().encode(value).length > MAX_LOCK_VALUE_BYTES) {
    throw new ValidationError(`a lock value must be at most ${MAX_LOCK_VALUE_BYTES} bytes of UTF-8`);
  }
  return value;
}

/** The value a grant carries (absent when none). */
export function grantValue(grant: LockGrant): string | undefined {
  return typeof grant.value === 'string' ? grant.value : undefined;
}

/** The highest fencing token among the key's holders, "0" when free: what L8's `after` names. */
export function highestToken(info: LockInfo): FencingToken {
  // A server from before v3 answers no `holders`: its one holder is the single-holder fields.
  if (info.holders) return highestHolderToken(info.holders);
  return info.held && info.fencingToken !== undefined ? info.fencingToken : '0';
}

/** The key's leader: its (lowest-token) holder, or null when free. */
export function leaderOf(info: LockInfo): Leader | null {
  const first = info.holders?.[0];
  if (first !== undefined) {
    return { owner: first.owner, term: first.fencingToken, ...(first.value === undefined ? {} : { value: first.value }) };
  }
  if (!info.held || info.fencingToken === undefined) return null;
  return { owner: info.owner ?? '', term: info.fencingToken };
}

/** Two leader states are one item of `observe`: same term and same value (a proclaim is a change). */
export function sameLeader(a: Leader | null, b: Leader | null): boolean {
  if (a === null || b === null) return a === b;
  return a.term === b.term && a.value === b.value;
}
