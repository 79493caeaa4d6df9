/**
 * The protected resource of a multi-holder key (a semaphore's pool, a reader/writer's data), as a
 * test oracle that counts its concurrent holders and fences them.
 *
 * Every holder enters when its grant is answered and leaves just before it sends its release, in
 * this one process: what is inside at any moment was granted and not yet given back, so all of it
 * was live at the store at once (the workloads' TTLs outlast them, and a lost handle is counted
 * apart). Counting in the event loop's order, not by timestamps, makes the count exact.
 *
 * How it fences (what a real resource would do with the tokens):
 * - a semaphore's resource admits `limit` tokens; a token entering a full resource evicts the
 *   lowest one inside (the store only grants past the limit once that grant has ended), and a
 *   later write by an evicted token is refused;
 * - a reader/writer resource refuses a writer's token unless it is above every token it has seen
 *   (no grant coexists with a writer, so every earlier holder was granted before it), and a
 *   reader's token unless it is above every writer's token it has seen (a reader granted while a
 *   writer held the key would be below it).
 * In a run where no grant is lost, any eviction or refusal is a violation, like any overcount.
 */
import type { ObservedGrant } from '../../support/fenced-resource.js';

export type HoldingMode = 'exclusive' | 'shared';

export class FencedHolderResource {
  readonly violations: string[] = [];
  /** Tokens inside now, by token, with their mode. */
  readonly #inside = new Map<bigint, HoldingMode>();
  #highestSeen = -1n;
  #highestWriter = -1n;
  readonly #evicted = new Set<bigint>();
  #maxInside = 0;
  #maxShared = 0;
  #entries = 0;

  /** `limit`: holders a semaphore admits (1 for a reader/writer key: its writers are alone). */
  constructor(readonly limit: number) {}

  /** The most holders seen inside at once, and the most readers. */
  get maxInside(): number {
    return this.#maxInside;
  }

  get maxShared(): number {
    return this.#maxShared;
  }

  get entries(): number {
    return this.#entries;
  }

  get insideNow(): number {
    return this.#inside.size;
  }

  /** A holder's grant was answered: it writes with its token at once. */
  enter(token: string, mode: HoldingMode): void {
    const value = BigInt(token);
    this.#entries += 1;
    if (this.#inside.has(value)) this.violations.push(`token ${token} entered twice`);
    const shared = [...this.#inside.values()].filter((m) => m === 'shared').length;
    const exclusive = this.#inside.size - shared;
    if (mode === 'shared') {
      if (exclusive > 0) this.violations.push(`reader ${token} entered while ${exclusive} writer(s) held the key`);
      if (value < this.#highestWriter) this.violations.push(`reader ${token} fenced out: below writer ${this.#highestWriter}`);
    } else {
      if (shared > 0) this.violations.push(`writer ${token} entered while ${shared} reader(s) held the key`);
      if (this.limit === 1 && value <= this.#highestSeen) this.violations.push(`writer ${token} fenced out: not above ${this.#highestSeen}`);
      if (exclusive >= this.limit) {
        const lowest = [...this.#inside.keys()].reduce((a, b) => (a < b ? a : b));
        this.violations.push(`token ${token} entered with ${exclusive} holders inside (limit ${this.limit}); evicting ${lowest}`);
        this.#inside.delete(lowest);
        this.#evicted.add(lowest);
      }
      if (value > this.#highestWriter) this.#highestWriter = value;
    }
    this.#inside.set(value, mode);
    if (value > this.#highestSeen) this.#highestSeen = value;
    this.#maxInside = Math.max(this.#maxInside, this.#inside.size);
    if (mode === 'shared') this.#maxShared = Math.max(this.#maxShared, shared + 1);
  }

  /** A holder is about to send its release: its last write, then it is gone. */
  leave(token: string): void {
    const value = BigInt(token);
    if (this.#evicted.has(value)) this.violations.push(`token ${token} wrote after it was evicted`);
    else if (!this.#inside.delete(value)) this.violations.push(`token ${token} left without entering`);
  }
}

/** Every token distinct: each grant, of whatever kind, draws its own. */
export function findDuplicateTokens(grants: readonly ObservedGrant[]): string[] {
  const seen = new Set<bigint>();
  const duplicates: string[] = [];
  for (const grant of grants) {
    if (seen.has(grant.token)) duplicates.push(`token ${grant.token} granted twice`);
    seen.add(grant.token);
  }
  return duplicates;
}

/**
 * Grants answered out of token order (a lower token answered after a higher one). Allowed for a
 * multi-holder key (two grants made at once may be answered in either order); counted for the report.
 */
export function countOutOfOrderAnswers(grants: readonly ObservedGrant[]): number {
  let highest = -1n;
  let count = 0;
  for (const grant of [...grants].sort((a, b) => a.grantedAt - b.grantedAt)) {
    if (grant.token < highest) count += 1;
    else highest = grant.token;
  }
  return count;
}
