/**
 * Leader election on a lock key (v3): `session.campaign(name, value)` waits
 * until this session holds `name`, then hands back a Leadership that keeps the
 * grant renewed (as withLock does) until it is resigned or lost.
 *
 * The term is the grant's fencing token: every new leader's is higher, so a
 * resource fenced on it (`fenced()`) refuses a deposed leader's late writes.
 */
import { Backoff } from './backoff.js';
import type { Clock } from './clock.js';
import { NotLeaderError, TransportError } from './errors.js';
import type { LockHandle } from './handle.js';
import type { ClientLogger } from './logger.js';
import { AcquirePolicy, MAX_WAIT_MILLIS } from './policy.js';
import type { RandomSource } from './random.js';
import { longestVouchedWaitMillis, TRANSIENT_FLOOR_MILLIS } from './runtime.js';
import type { FencingToken } from './wire.js';

export interface CampaignOptions {
  /** TTL of the leadership grant in ms (renewed every third of it); the server's default when omitted. */
  ttlMillis?: number;
  /** Aborting stops campaigning: the call rejects with the signal's reason, and a late grant is released. */
  signal?: AbortSignal;
}

/**
 * One acquire call's budget while campaigning: a run of server-side waits; when it
 * ends not granted, the next starts. Each wait is at most half the grant's vouched
 * life (TTL − margin): the SDK vouches for a grant from its L4's send time, so a
 * grant answered at the end of a longer wait would be given back and taken again — a
 * leader for an instant that `observe` would report and no campaign ever ran as.
 * Without `ttlMillis` the grant's TTL is the server's default, taken to be C3's 30 s.
 */
export function campaignRound(ttlMillis: number | undefined, safetyMarginMillis: number): AcquirePolicy {
  return new AcquirePolicy({
    totalBudgetMillis: 60_000,
    waitMillis: Math.min(MAX_WAIT_MILLIS, longestVouchedWaitMillis(ttlMillis, safetyMarginMillis)),
    maxAttempts: 1_000,
    baseBackoffMillis: 50,
    maxBackoffMillis: 1_000,
  });
}

export interface CampaignLoop {
  clock: Clock;
  random: RandomSource;
  logger: ClientLogger;
  key: string;
  signal: AbortSignal | undefined;
  /** Each round's policy (campaignRound). */
  round: AcquirePolicy;
  /** One acquire of the key with the round's policy: a handle, or null when the round ended not granted. */
  acquire(policy: AcquirePolicy): Promise<LockHandle | null>;
}

/**
 * Acquire rounds until granted. A round that ran out of its budget on a server
 * that could not take writes (NotLeaderError) or could not be reached
 * (TransportError) is followed by another after a full-jitter pause, so a
 * campaign outlives a server outage as long as its session does; anything else
 * (the session lost, a 4xx, the signal) ends it.
 */
export async function campaignUntilElected(loop: CampaignLoop): Promise<LockHandle> {
  const backoff = new Backoff(TRANSIENT_FLOOR_MILLIS, 2_000, loop.random);
  for (let outages = 0; ; ) {
    loop.signal?.throwIfAborted();
    try {
      const handle = await loop.acquire(loop.round);
      if (handle !== null) return handle;
      outages = 0;
    } catch (error) {
      if (!(error instanceof NotLeaderError || error instanceof TransportError)) throw error;
      loop.logger.warn({ key: loop.key, err: error }, 'campaign round failed; campaigning on');
      await loop.clock.sleep(TRANSIENT_FLOOR_MILLIS + backoff.delay(outages), loop.signal);
      outages += 1;
    }
  }
}

/**
 * This session leads `name` while `signal` is not aborted. The grant is renewed
 * in the background; `signal` aborts when it is lost (reason: LockLostError or
 * SessionLostError) or resigned. A lost leadership gives its handle back to the
 * session at once (L6 compare-and-delete, harmless when the grant is gone), so
 * the session can campaign again; `resign()` then does nothing more.
 */
export class Leadership {
  readonly #handle: LockHandle;
  readonly #stopRenewing: () => void;
  readonly #release: (handle: LockHandle) => Promise<void>;
  #resigned: Promise<void> | undefined;

  /** @internal Use LockSession.campaign. */
  constructor(handle: LockHandle, stopRenewing: () => void, release: (handle: LockHandle) => Promise<void>, logger: ClientLogger) {
    this.#handle = handle;
    this.#stopRenewing = stopRenewing;
    this.#release = release;
    const onEnd = (): void => {
      if (!handle.lost) return; // resigned: resign() is already giving it back
      this.resign().catch((error: unknown) =>
        logger.warn({ key: handle.key, err: error }, 'giving back a lost leadership failed; it expires by its TTL'),
      );
    };
    if (handle.signal.aborted) onEnd();
    else handle.signal.addEventListener('abort', onEnd, { once: true });
  }

  /** The election key. */
  get name(): string {
    return this.#handle.key;
  }

  /** This leadership's fencing token: above every earlier leader's. Pass it with every write. */
  get term(): FencingToken {
    return this.#handle.fencingToken;
  }

  /** The leader's value as last proclaimed (the campaign's value at first). */
  get value(): string | undefined {
    return this.#handle.value;
  }

  /** Aborts when the leadership is lost or resigned. */
  get signal(): AbortSignal {
    return this.#handle.signal;
  }

  get lost(): boolean {
    return this.#handle.lost;
  }

  /** When the SDK stops vouching for the leadership unless a renewal succeeds (the client Clock's ms). */
  get expiresAt(): number {
    return this.#handle.expiresAt;
  }

  /** Replace the leader's value (L5 with `value`, same term); see LockHandle.proclaim. */
  proclaim(value: string): Promise<void> {
    return this.#handle.proclaim(value);
  }

  /** Stop renewing and release the key (L6): the next campaigner is elected. Idempotent. */
  resign(): Promise<void> {
    this.#resigned ??= (async () => {
      this.#stopRenewing();
      await this.#release(this.#handle);
    })();
    return this.#resigned;
  }
}
