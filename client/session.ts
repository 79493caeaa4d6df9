/**
 * A heartbeated session: the unit of lock ownership.
 *
 * Reentrancy is per session, not per async context: while this session holds
 * a key (and its handle is not lost), `acquire` of that key returns the same
 * handle with depth + 1 and sends nothing; `release` sends L6 only at depth 0.
 * Two tasks sharing a session therefore share its locks — give tasks that
 * must exclude each other their own sessions.
 *
 * A second `acquire` of a key while this session is still acquiring it (the
 * first call has not returned) is not a nested hold: it returns `null` (not
 * granted) at once and sends nothing, because there is no handle yet to nest on.
 *
 * A session holds at most one grant of a key whatever its kind (v3: the server answers
 * a second L4 with the grant it has), so a semaphore needs one session per permit.
 * A nested acquire must ask for the held kind (`mode` and `limit`): asking for another is
 * a ValidationError, never a silently weaker hold (a reader that believes it writes).
 *
 * The session's bearer token (from L1) lives only in a private field and goes
 * out as the `Authorization` header of this session's own L2–L6 calls; it is
 * never logged, thrown, traced or exposed on the session or its handles.
 */
import { assertKnownAcquireOptions, type AcquireOptions } from './acquire-options.js';
import { failureToError, type ApiResult } from './api.js';
import { FALLBACK_BACKEND, type BackendLabel } from './backend-label.js';
import { runAcquireLoop } from './acquire-loop.js';
import { Backoff } from './backoff.js';
import {
  DeadlockDetectedError,
  LockLostError,
  SessionLostError,
  ValidationError,
  type SessionLossCause,
} from './errors.js';
import { HeldLock, type LockHandle, type Proclaimer } from './handle.js';
import { HeartbeatScheduler } from './heartbeat.js';
import { describeHolding, grantHolding, holdingFields, requestedHolding, sameHolding, type Holding } from './holding.js';
import { canonicalKeyOrder, validateKey } from './keys.js';
import { campaignRound, campaignUntilElected, Leadership, type CampaignOptions } from './leadership.js';
import { AcquirePolicy, type AcquirePolicyInit } from './policy.js';
import { sendProclaim, type ProclaimContext } from './proclaim.js';
import { startRenewer } from './renewer.js';
import { conservativeDeadline, longestVouchedWaitMillis, type ClientRuntime } from './runtime.js';
import { retryTransient, SHORT_BUDGET } from './transient.js';
import type { ClientAttemptOutcome } from '../contract/metric-table.js';
import { validateValue } from './values.js';
import { LOCK_TTL_MILLIS, type LockGrant, type LockMode, type SessionOpened } from './wire.js';

export type { AcquireOptions } from './acquire-options.js';

type SessionState = 'open' | 'lost' | 'closed';

/** L4's body as the SDK sends it (`mode`/`limit` only when not a mutex's). */
type AcquireBody = Parameters<ClientRuntime['api']['acquire']>[1];

export class LockSession {
  readonly sessionId: string;
  readonly owner: string;
  readonly ttlMillis: number;
  readonly #rt: ClientRuntime;
  readonly #sessionToken: string;
  readonly #held = new Map<string, HeldLock>();
  readonly #acquiring = new Set<string>();
  /**
   * Per key, the send time of the earliest L4 whose answer never arrived. The
   * server may have granted it; a later L4 then gets that grant back as the
   * "existing grant" — a token we never saw, expiring on the old schedule.
   */
  readonly #unanswered = new Map<string, number>();
  readonly #controller = new AbortController();
  readonly #heartbeat: HeartbeatScheduler;
  /** How this session's handles send `proclaim` (L5 with a value, with the session's token). */
  readonly #proclaim: Proclaimer;
  #state: SessionState = 'open';
  #lossCause: SessionLossCause = 'not_found';
  #backend: BackendLabel | undefined;

  /** @internal Use LockClient.openSession. */
  constructor(rt: ClientRuntime, opened: SessionOpened, sentAt: number, backend: BackendLabel | undefined) {
    this.#rt = rt;
    this.#sessionToken = opened.sessionToken;
    this.sessionId = opened.sessionId;
    this.owner = opened.owner;
    this.ttlMillis = opened.ttlMillis;
    this.#noteBackend(backend);
    this.#heartbeat = new HeartbeatScheduler({
      api: rt.api,
      clock: rt.clock,
      sessionId: opened.sessionId,
      sessionToken: opened.sessionToken,
      ttlMillis: opened.ttlMillis,
      safetyMarginMillis: rt.safetyMarginMillis,
      initialDeadline: conservativeDeadline(sentAt, opened.ttlMillis, rt.safetyMarginMillis),
      onBackend: (b) => this.#noteBackend(b),
      onLost: (cause) => this.#lose(cause),
    });
    this.#heartbeat.start();
    const { api, clock, random, safetyMarginMillis } = rt;
    const proclaimContext: ProclaimContext = {
      api,
      clock,
      random,
      safetyMarginMillis,
      sessionId: opened.sessionId,
      sessionToken: opened.sessionToken,
      assertUsable: () => this.#assertUsable(),
      onSessionRefused: (cause) => this.#lose(cause),
    };
    this.#proclaim = (lock, value) => sendProclaim(proclaimContext, lock, value);
  }

  /** True once the session was declared lost; every handle of it is lost too. */
  get lost(): boolean {
    return this.#state === 'lost';
  }

  get closed(): boolean {
    return this.#state === 'closed';
  }

  /** Aborts when the session is lost or closed. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** The conservative deadline of the session, in the Clock's monotonic ms. */
  get expiresAt(): number {
    return this.#heartbeat.deadlineAt;
  }

  /** The heartbeat period (a third of the session TTL). */
  get heartbeatIntervalMillis(): number {
    return this.#heartbeat.intervalMillis;
  }

  /** Take `key`, retrying within the policy's budget. `null`: not granted. */
  async acquire(rawKey: string, options: AcquireOptions = {}): Promise<LockHandle | null> {
    // The key as the server holds it (NFC): "é" precomposed or decomposed is one key, one handle.
    const key = validateKey(rawKey);
    const { policy, holding } = this.#checked(options);
    const nested = this.#reenter(key, holding);
    if (nested !== undefined) return nested;
    if (this.#acquiring.has(key)) return null;
    const deadline = this.#rt.clock.now() + policy.totalBudgetMillis;
    return this.#acquireNew(key, options, holding, policy, deadline);
  }

  /**
   * Take every key (duplicates once) in canonical order within one shared
   * deadline; all or nothing. Returns the handles in canonical order, or null
   * after releasing (in reverse order) whatever was taken.
   *
   * DEADLOCK_DETECTED on one key (its wait closed a cycle): what this call took
   * is given back, and after a full-jitter delay the whole set is tried again
   * from the first key, within the same deadline; `null` when the budget cannot
   * fit another round. Locks the session held before the call stay held (only
   * their nesting depth is undone), so a cycle through them can recur.
   */
  async acquireAll(keys: Iterable<string>, options: AcquireOptions = {}): Promise<LockHandle[] | null> {
    const ordered = canonicalKeyOrder([...keys].map(validateKey));
    const { policy, holding } = this.#checked(options);
    const { clock, random, rtt, logger } = this.#rt;
    const deadline = clock.now() + policy.totalBudgetMillis;
    const backoff = new Backoff(policy.baseBackoffMillis, policy.maxBackoffMillis, random);
    for (let round = 0; ; round += 1) {
      try {
        return await this.#acquireAllOnce(ordered, options, holding, policy, deadline);
      } catch (error) {
        if (!(error instanceof DeadlockDetectedError)) throw error;
        const delay = backoff.delay(round);
        logger.debug({ key: error.key, sessionId: this.sessionId, round }, 'acquireAll gave back its locks after a deadlock');
        if (deadline - clock.now() <= delay + rtt.millis) return null;
        await clock.sleep(delay, options.signal);
      }
    }
  }

  /** What acquire and acquireAll check before sending anything: the options, the policy, the value, the session. */
  #checked(options: AcquireOptions): { policy: AcquirePolicy; holding: Holding } {
    assertKnownAcquireOptions(options);
    const policy = AcquirePolicy.from(options.policy ?? this.#rt.defaultPolicy);
    if (options.value !== undefined) validateValue(options.value);
    const holding = requestedHolding(options);
    this.#assertUsable();
    return { policy, holding };
  }

  async #acquireAllOnce(
    ordered: readonly string[],
    options: AcquireOptions,
    holding: Holding,
    policy: AcquirePolicy,
    deadline: number,
  ): Promise<LockHandle[] | null> {
    const taken: LockHandle[] = [];
    try {
      for (const key of ordered) {
        this.#assertUsable();
        const handle =
          this.#reenter(key, holding) ??
          (this.#acquiring.has(key)
            ? null
            : await this.#acquireNew(key, options, holding, policy, deadline));
        if (handle === null) {
          await this.#unwind(taken);
          return null;
        }
        taken.push(handle);
      }
      return taken;
    } catch (error) {
      await this.#unwind(taken);
      throw error;
    }
  }

  /**
   * Acquire `key`, run `fn(handle)` while renewing the lock in the background,
   * and release in `finally`. Returns fn's result, or `null` when the lock was
   * not granted (fn did not run). Watch `handle.signal`: it aborts at once if
   * the lock is lost mid-run. A release failure after `fn` is logged, not
   * thrown — the work is done and the lock expires by its TTL.
   */
  async withLock<T>(
    key: string,
    fn: (handle: LockHandle) => T | Promise<T>,
    options: AcquireOptions = {},
  ): Promise<T | null> {
    const handle = await this.acquire(key, options);
    if (handle === null) return null;
    // handle.key, not key: the key as validated (NFC), under which the session holds it.
    const stopRenewing = this.#renewWhileRunning(handle.key);
    try {
      return await fn(handle);
    } finally {
      stopRenewing();
      await this.release(handle).catch((error: unknown) =>
        this.#rt.logger.warn({ key, sessionId: this.sessionId, err: error }, 'release after withLock failed'),
      );
    }
  }

  /**
   * Campaign for leadership of `name` (v3): wait — server-side waits, round after round —
   * until this session holds the key with `value` (undefined: none), then keep it renewed in the background.
   * The Leadership's `term` is its fencing token; its `signal` aborts when it is lost or
   * resigned. Rejects with the signal's reason when `options.signal` aborts first, with
   * SessionLostError when the session is lost; a NotLeaderError or TransportError round
   * (server outage) is followed by another. A session campaigns for a name once at a time:
   * one it holds or is acquiring already is a ValidationError.
   */
  async campaign(rawName: string, value: string | undefined, options: CampaignOptions = {}): Promise<Leadership> {
    const key = validateKey(rawName);
    if (value !== undefined) validateValue(value);
    this.#assertUsable();
    const { clock, random, logger } = this.#rt;
    const handle = await campaignUntilElected({
      clock,
      random,
      logger,
      key,
      signal: options.signal,
      round: campaignRound(options.ttlMillis, this.#rt.safetyMarginMillis),
      acquire: (policy) => {
        // Checked every round: nesting on a held key, or riding another call's acquire, is not a campaign.
        if (this.#held.has(key) || this.#acquiring.has(key)) {
          throw new ValidationError(`session ${this.sessionId} already holds or is acquiring ${JSON.stringify(key)}`);
        }
        return this.acquire(key, {
          policy,
          ...(value === undefined ? {} : { value }),
          ...(options.ttlMillis === undefined ? {} : { ttlMillis: options.ttlMillis }),
          ...(options.signal === undefined ? {} : { signal: options.signal }),
        });
      },
    });
    return new Leadership(handle, this.#renewWhileRunning(key), (h) => this.release(h), logger);
  }

  /** Release one hold. L6 is sent only when the outermost hold is released. */
  async release(handle: LockHandle): Promise<void> {
    const held = this.#held.get(handle.key);
    if (held === undefined || held.handle !== handle) {
      throw new ValidationError(`lock ${JSON.stringify(handle.key)} is not held by session ${this.sessionId}`);
    }
    held.depth -= 1;
    if (held.depth > 0) return;
    this.#held.delete(handle.key);
    held.markReleased();
    // A lost session's locks are already gone on the server (or going); nothing to send.
    if (this.#state !== 'open') return;
    const { clock, random, api } = this.#rt;
    const answer = await retryTransient(clock, random, SHORT_BUDGET, 'the release', (timeout) =>
      api.release(held.key, { sessionId: this.sessionId, fencingToken: held.fencingToken }, this.#sessionToken, timeout),
    );
    if (answer.ok || answer.code === 'LOCK_LOST') return; // LOCK_LOST: already gone, benign
    if (answer.code === 'SESSION_NOT_FOUND') {
      // Benign too: a session that is not live holds no locks, so this one is gone anyway.
      this.#lose('not_found');
      return;
    }
    if (answer.code === 'UNAUTHENTICATED') {
      // The lock may still be held, and nothing we send can release it: say so.
      this.#lose('unauthenticated');
      throw new SessionLostError(this.sessionId, 'unauthenticated');
    }
    throw failureToError(answer);
  }

  /** Release several handles in reverse order (the order acquireAll took them, undone). */
  async releaseAll(handles: readonly LockHandle[]): Promise<void> {
    for (const handle of [...handles].reverse()) await this.release(handle);
  }

  /** Stop heartbeats, end every hold and close the session on the server (L3). Idempotent. */
  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    const wasOpen = this.#state === 'open';
    this.#state = 'closed';
    this.#heartbeat.stop();
    for (const held of this.#held.values()) held.markReleased();
    this.#held.clear();
    this.#controller.abort(new SessionLostError(this.sessionId, 'closed'));
    if (!wasOpen) return;
    const { clock, random, api } = this.#rt;
    const answer = await retryTransient(clock, random, SHORT_BUDGET, 'the session close', (timeout) =>
      api.closeSession(this.sessionId, this.#sessionToken, timeout),
    );
    if (answer.ok || answer.code === 'SESSION_NOT_FOUND') return;
    if (answer.code === 'UNAUTHENTICATED') {
      // Closed here already; the server's copy ends by its TTL, with its locks.
      this.#rt.logger.warn({ sessionId: this.sessionId }, 'the server refused the session token on close; it expires by its TTL');
      return;
    }
    throw failureToError(answer);
  }

  #assertUsable(): void {
    if (this.#state === 'lost') throw new SessionLostError(this.sessionId, this.#lossCause);
    if (this.#state === 'closed') throw new SessionLostError(this.sessionId, 'closed');
  }

  /** depth + 1 on a held key; LockLostError on a lost one; ValidationError for another kind; undefined when not held. */
  #reenter(key: string, holding: Holding): LockHandle | undefined {
    const held = this.#held.get(key);
    if (held === undefined) return undefined;
    if (held.lost) {
      throw new LockLostError(key, held.fencingToken, 'its handle is lost; release it before acquiring again');
    }
    if (!sameHolding(held.holding, holding)) {
      throw new ValidationError(
        `session ${this.sessionId} holds ${JSON.stringify(key)} as ${describeHolding(held.holding)}; a nested acquire cannot ask for ${describeHolding(holding)} (release it first)`,
      );
    }
    held.depth += 1;
    return held.handle;
  }

  async #acquireNew(key: string, options: AcquireOptions, holding: Holding, policy: AcquirePolicy, deadline: number): Promise<LockHandle | null> {
    const { ttlMillis, signal, value } = options;
    const rt = this.#rt;
    this.#acquiring.add(key);
    /** An L4 the caller's abort left in flight, until its answer is settled. */
    let settling: Promise<void> | undefined;
    const progress = { attempts: 0 };
    let outcome: ClientAttemptOutcome = 'error';
    let pendingDeadline = 0; // set by vet for the grant it keeps
    try {
      return await rt.tracer.inSpan(key, async (span) => {
        try {
          const result = await runAcquireLoop({
            key,
            limit: holding.limit,
            clock: rt.clock,
            backoff: new Backoff(policy.baseBackoffMillis, policy.maxBackoffMillis, rt.random),
            rtt: rt.rtt,
            policy,
            deadline,
            longestWaitMillis: longestVouchedWaitMillis(ttlMillis, rt.safetyMarginMillis),
            requestTimeoutMillis: rt.requestTimeoutMillis,
            signal,
            progress,
            assertUsable: () => this.#assertUsable(),
            send: async (waitMillis, timeout) => {
              const body: AcquireBody = { sessionId: this.sessionId, ...holdingFields(holding) };
              if (ttlMillis !== undefined) body.ttlMillis = ttlMillis;
              if (waitMillis > 0) body.waitMillis = waitMillis;
              if (value !== undefined) body.value = value;
              const answer = await rt.api.acquire(key, body, this.#sessionToken, timeout);
              this.#noteBackend(answer.backend);
              return answer;
            },
            sessionRefused: (cause) => {
              this.#lose(cause);
              return new SessionLostError(this.sessionId, cause);
            },
            vet: async (grant, sentAt) => {
              // Throws FencedOutError for a token below one this client was granted before.
              const known = rt.watermark.admit(key, grant.fencingToken, this.sessionId, grantHolding(grant)) === 'seen';
              const earliest = Math.min(sentAt, this.#earliestUnanswered(key) ?? sentAt);
              const deadline = conservativeDeadline(earliest, grant.ttlMillis, rt.safetyMarginMillis);
              // Another kind than asked is a grant an abandoned acquire of this session left (the server
              // answers the grant it has, whatever is asked): not what this caller wants, so given back too.
              const asked = sameHolding(grantHolding(grant), holding);
              if (!known && asked && deadline > rt.clock.now()) {
                this.#unanswered.delete(key); // the token is known now: a later return of it is `known`
                pendingDeadline = deadline;
                return 'keep';
              }
              // A token we already knew (an earlier hold or a discarded grant, perhaps with its
              // release still in flight), or one too old to vouch for: give it back, retry fresh.
              if (await this.#releaseGrant(grant)) this.#unanswered.delete(key);
              return 'discard';
            },
            unanswered: (sentAt) => {
              if (!this.#unanswered.has(key)) this.#unanswered.set(key, sentAt);
            },
            heldByOther: () => this.#unanswered.delete(key),
            abandoned: (sentAt, late) => {
              // Until it is settled the key stays in flight here (a new acquire of it answers null, as
              // any concurrent one does): a retry that got this grant back would otherwise be vouched
              // for, and then lose the lock to this release.
              if (!this.#unanswered.has(key)) this.#unanswered.set(key, sentAt);
              settling = late.then(
                (answer) => this.#settleAbandoned(key, answer),
                () => {}, // never answered: it stays unanswered, and a later grant of the key is measured from it
              );
            },
          });
          if (!result.granted) {
            outcome = 'not_granted';
            return null;
          }
          const handle = this.#adopt(key, result.grant, pendingDeadline);
          outcome = 'granted';
          span.setAttribute('lock.fencing_token', handle.fencingToken);
          return handle;
        } finally {
          span.setAttribute('lock.attempts', progress.attempts);
          span.setAttribute('lock.outcome', outcome);
        }
      });
    } finally {
      if (settling) void settling.finally(() => this.#acquiring.delete(key));
      else this.#acquiring.delete(key);
      if (progress.attempts > 0) rt.meters.acquireAttempts(outcome, progress.attempts);
      rt.logger.debug(
        { key, sessionId: this.sessionId, attempts: progress.attempts, outcome },
        'lock.acquire finished',
      );
    }
  }

  /** The answer to an L4 its caller abandoned: a grant is made known (never vouched for later) and given back. */
  async #settleAbandoned(key: string, answer: ApiResult<LockGrant>): Promise<void> {
    if (answer.ok) {
      try {
        this.#rt.watermark.admit(key, answer.value.fencingToken, this.sessionId, grantHolding(answer.value));
      } catch {
        // A token below one this client was granted (a wiped store): given back all the same.
      }
      if (await this.#releaseGrant(answer.value)) this.#unanswered.delete(key);
    } else if (answer.code === 'LOCK_CONTENDED') {
      this.#unanswered.delete(key); // another session holds the key: no grant of ours survives
    }
  }

  /** Turn a vetted grant into a held lock with its conservative deadline. */
  #adopt(key: string, grant: LockGrant, expiresAt: number): LockHandle {
    this.#assertUsable(); // a grant that arrives after the session died vouches for nothing
    const held = new HeldLock(key, grant.fencingToken, grant.ttlMillis, expiresAt, this.#rt.clock, grant.value, this.#proclaim, grantHolding(grant));
    this.#held.set(key, held);
    return held.handle;
  }

  /** An unanswered L4 older than the longest lock TTL cannot have left a live grant. */
  #earliestUnanswered(key: string): number | undefined {
    const at = this.#unanswered.get(key);
    if (at !== undefined && this.#rt.clock.now() - at > LOCK_TTL_MILLIS.max) {
      this.#unanswered.delete(key);
      return undefined;
    }
    return at;
  }

  /**
   * Give back a grant no handle vouches for (L6, compare-and-delete). True when
   * the server confirmed the lock is gone; failures only log (it expires by TTL).
   */
  async #releaseGrant(grant: LockGrant): Promise<boolean> {
    const { clock, random, api, logger } = this.#rt;
    try {
      const answer = await retryTransient(clock, random, SHORT_BUDGET, 'the release', (timeout) =>
        api.release(grant.key, { sessionId: this.sessionId, fencingToken: grant.fencingToken }, this.#sessionToken, timeout),
      );
      if (answer.ok) return true;
      if (answer.code === 'UNAUTHENTICATED') this.#lose('unauthenticated');
      // SESSION_NOT_FOUND: a session that is not live holds nothing, so the grant is gone too.
      return answer.code === 'LOCK_LOST' || answer.code === 'SESSION_NOT_FOUND';
    } catch (error) {
      logger.warn({ key: grant.key, sessionId: this.sessionId, err: error }, 'could not give back a grant; it expires by TTL');
      return false;
    }
  }

  #renewWhileRunning(key: string): () => void {
    const held = this.#held.get(key);
    if (held === undefined) return () => {};
    held.renewers += 1;
    if (held.renewers === 1) {
      held.stopRenewing = startRenewer({
        api: this.#rt.api,
        clock: this.#rt.clock,
        sessionId: this.sessionId,
        sessionToken: this.#sessionToken,
        lock: held,
        safetyMarginMillis: this.#rt.safetyMarginMillis,
        onSessionRefused: (cause) => this.#lose(cause),
      });
    }
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      held.renewers -= 1;
      if (held.renewers === 0) {
        held.stopRenewing?.();
        held.stopRenewing = undefined;
      }
    };
  }

  async #unwind(taken: LockHandle[]): Promise<void> {
    for (const handle of [...taken].reverse()) {
      await this.release(handle).catch((error: unknown) =>
        this.#rt.logger.warn({ key: handle.key, sessionId: this.sessionId, err: error }, 'unwinding acquireAll failed'),
      );
    }
  }

  #noteBackend(backend: BackendLabel | undefined): void {
    if (backend === undefined) return;
    this.#backend = backend;
    this.#rt.lastBackend = backend;
  }

  /** Declare the session lost: once; counts it, loses every handle, aborts signals. */
  #lose(cause: SessionLossCause): void {
    if (this.#state !== 'open') return;
    this.#state = 'lost';
    this.#lossCause = cause;
    this.#heartbeat.stop();
    const backend = this.#backend ?? this.#rt.lastBackend ?? FALLBACK_BACKEND;
    this.#rt.meters.sessionLost(backend);
    this.#rt.logger.warn({ sessionId: this.sessionId, cause, backend }, 'session lost');
    const reason = new SessionLostError(this.sessionId, cause);
    for (const held of this.#held.values()) held.markLost(reason);
    this.#controller.abort(reason);
  }
}
