/**
 * One acquire's server-side wait, from its first try to its answer: registered with the waiter
 * registry (woken by releases), admitted once the store has checked its session token (only then
 * is it counted, capped and recorded in the fleet wait state), parked by the service's wait
 * strategy, and cleaned up however it ends. It rides a store outage out until its deadline.
 */
import { DeadlockDetectedError, NotLeaderError, SessionNotFoundError } from '../errors.js';
import type { EventContext, LockEvents } from '../../contract/lock-events.js';
import type { WaitOutcome } from '../../contract/metric-table.js';
import type { LockMode } from '../../contract/records.js';
import { holdingOf, isMutex } from './grants.js';
import { multiHolderKindOf } from '../../contract/wire-rules.js';
import type { HeldLock, SessionCredential, TryAcquireResult, WaitToRecord } from '../store/spi.js';
import type { Clock } from './clock.js';
import type { ContentionAnswers } from './contention-answers.js';
import type { LockInsight } from './insight.js';
import type { WaitRecords } from './wait-records.js';
import type { Poller, WaitStrategy } from './wait-strategy.js';
import type { Waiter, WaiterRegistry } from './waiters.js';

export interface AcquireWaitDeps {
  clock: Clock;
  waiters: WaiterRegistry;
  strategy: WaitStrategy;
  poller: Poller;
  /** Null when the store keeps no fleet-wide wait state. */
  records: WaitRecords | null;
  contention: ContentionAnswers;
  events: LockEvents;
  insight: LockInsight;
}

export interface WaitingAcquire {
  key: string;
  session: SessionCredential;
  ttlMillis: number;
  waitMillis: number;
  value?: string;
  mode?: LockMode;
  limit?: number;
}

/** Credentials the store has accepted lately, so a hot key's wait can be recorded before its first try. */
const MAX_VERIFIED_CREDENTIALS = 10_000;

export class AcquireWaits {
  private readonly verified = new Map<string, string>();

  constructor(readonly deps: AcquireWaitDeps) {}

  /** `capped`: the key's policy caps its waiters, so the wait is admitted only after that count is checked. */
  async open(req: WaitingAcquire, ctx: EventContext, signal?: AbortSignal, capped = false): Promise<AcquireWait> {
    // Others here already wait on this key: it is hot, and a first try would almost surely find it
    // held. Recorded first, one try covers what try-record-try covers — but only for a session
    // whose token the store has already accepted: nothing is recorded for an unchecked caller.
    const wait = new AcquireWait(this, req, ctx, signal, capped);
    // (A store that records the wait in the try itself needs neither: its first try covers both.)
    if (
      !capped &&
      this.deps.records &&
      !this.deps.records.recordsOnTry &&
      this.deps.waiters.count(req.key) > 0 &&
      this.verified.get(req.session.sessionId) === req.session.tokenHash
    ) {
      try {
        wait.admit(null);
        await this.deps.records.begin(wait.waiter);
      } catch (error) {
        await wait.close();
        throw error;
      }
    }
    return wait;
  }

  /** The store accepted this credential (a try answered granted or held). */
  accepted(credential: SessionCredential): void {
    if (this.verified.get(credential.sessionId) === credential.tokenHash) return;
    if (this.verified.size >= MAX_VERIFIED_CREDENTIALS) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(credential.sessionId, credential.tokenHash);
  }

  sessionEnded(sessionId: string): void {
    this.verified.delete(sessionId);
  }
}

export class AcquireWait {
  readonly waiter: Waiter;
  private readonly deps: AcquireWaitDeps;
  private readonly startedAt: number;
  private readonly deadline: number;
  private waited = false;
  private fellBack = false;
  private granted = false;
  /** Its end was reported (lock_wait_seconds): once per wait. */
  private reported = false;
  /** A try found the key held by another session: an `existing` grant after this was handed to this wait. */
  private sawHeldByOther = false;
  private readonly polls = { count: 0 };
  /** The waiter's releasesSeen before its latest try: a release after it that this wait did not win is handed on. */
  private seenAtLastTry = 0;
  /** A try carrying this wait's record got no answer (the store failed): it may have been recorded. */
  private recordUncertain = false;
  /** Forwards the caller's abort to the wait's one interruption signal. */
  private readonly callerLeft = (): void => this.waiter.callerLeft(this.signal?.reason);

  constructor(
    private readonly owner: AcquireWaits,
    private readonly req: WaitingAcquire,
    private readonly ctx: EventContext,
    private readonly signal: AbortSignal | undefined,
    /** The key's policy caps its waiters: recorded only after that count is checked (never by a try). */
    private readonly capped = false,
  ) {
    this.deps = owner.deps;
    this.startedAt = this.deps.clock.now();
    this.deadline = this.startedAt + req.waitMillis;
    // Registered before the first try, so a release landing between a failed try and the park still wakes it.
    this.waiter = this.deps.waiters.register(req.key, req.session.sessionId);
    // What a release needs to hand this wait the key (FIFO handoff on stores that do).
    // Only a mutex wait is handed a key (spi.ts "Multi-holder keys"): the others wake and try.
    const holding = holdingOf(req);
    this.waiter.grantTtlMillis = isMutex(holding) ? req.ttlMillis : undefined;
    this.waiter.grantValue = req.value;
    this.waiter.mode = holding.mode;
    this.waiter.deadline = this.deadline;
    if (signal?.aborted) this.waiter.callerLeft(signal.reason);
    else signal?.addEventListener('abort', this.callerLeft, { once: true });
  }

  get releasesSeen(): number {
    return this.waiter.releasesSeen;
  }

  get remaining(): number {
    return this.deadline - this.deps.clock.now();
  }

  /**
   * One try. A new acquire hears an outage at once (the error is thrown); a wait already under way
   * rides it out, polling, until its deadline — the store may return in time (the probe wakes it):
   * then the answer is null and the caller tries again.
   */
  async attempt(tryAcquire: () => Promise<TryAcquireResult>): Promise<TryAcquireResult | null> {
    const seen = this.waiter.releasesSeen;
    this.seenAtLastTry = seen;
    try {
      const result = await tryAcquire();
      if (result.kind === 'granted' || result.kind === 'held') this.owner.accepted(this.req.session);
      return result;
    } catch (error) {
      if (!this.waited || !(error instanceof NotLeaderError) || this.remaining <= 0) {
        if (this.waited && error instanceof NotLeaderError) this.end('deadline');
        throw error;
      }
      const outcome = await this.deps.poller.delay({ waiter: this.waiter, releasesSeen: seen, polls: this.polls, deadline: this.deadline, signal: this.waiter.interrupted });
      this.answerInterruption(outcome);
      return null;
    }
  }

  /** The grant a release handed this wait, once one has (the wait then answers with it, no try). */
  get handed(): HeldLock | null {
    return this.waiter.handed;
  }

  /**
   * A granted try's grant is new to the caller unless the session held the key before this
   * acquire: `existing` after a try found another holder means a release handed it to this wait.
   */
  isNew(result: { existing: boolean }): boolean {
    return !result.existing || this.sawHeldByOther;
  }

  /**
   * Ends the wait's record before answering without the key, and answers the grant a release
   * handed it meanwhile, if one did: then the acquire succeeded after all.
   */
  async finish(): Promise<HeldLock | null> {
    const handed = (await this.deps.records?.finish(this.waiter)) ?? null;
    return handed ?? this.waiter.handed;
  }

  /** The wait's id while it is recorded in the fleet state: a grant to it ends it in the same write. */
  get recordedWaitId(): string | undefined {
    return this.waiter.recordedInStore ? this.waiter.waitId : undefined;
  }

  /**
   * The record for the next try to keep should it find the key held, on stores that record waits
   * in the try (one statement where try, record and try again took three); undefined when the wait
   * is recorded already, its key's policy caps waiters, or the session's waits here are at the cap
   * (admit refuses it). Counted as recorded from now: if no answer comes, it may have been.
   */
  recordOnTry(): WaitToRecord | undefined {
    const records = this.deps.records;
    if (!records?.recordsOnTry || this.capped || (this.waiter.recordedInStore && !this.recordUncertain)) return undefined;
    if (!this.waiter.admitted && this.deps.waiters.countForSession(this.req.session.sessionId) >= this.deps.contention.maxWaitsPerSession) return undefined;
    this.waiter.recordedInStore = true;
    this.recordUncertain = true;
    return records.toRecordOnTry(this.waiter);
  }

  /** The answer to a try that carried the wait's record: recorded only when it found the key held and says so. */
  triedWithRecord(result: TryAcquireResult | null): void {
    if (result === null) return; // no answer: still uncertain, and the next try sends the record again
    this.recordUncertain = false;
    this.waiter.recordedInStore = result.kind === 'held' && result.waitRecorded === true;
    if (this.waiter.recordedInStore) this.waited = true;
  }

  /**
   * The grant ended the wait's record in its own write (FleetWaitState in spi.ts: a try's grant
   * sent with the wait's id; a handed grant's record goes with that grant's release or the
   * store's sweep), so closing the wait sends no end of its own: one statement less per wait.
   */
  recordEndedByGrant(): void {
    this.waiter.recordedInStore = false;
  }

  /** True once the wait counts (admit). */
  get admitted(): boolean {
    return this.waiter.admitted;
  }

  /** The store checked the session token and found the key held: from now on the wait counts. */
  admit(holder: HeldLock | null): void {
    if (holder && holder.sessionId !== this.req.session.sessionId) this.sawHeldByOther = true;
    // An edge to a key that admits several holders is marked, and never decides a deadlock (wait-graph.ts canDeadlock).
    if (holder) this.waiter.holderKind = multiHolderKindOf(holder);
    this.waiter.holderSessionId = holder?.sessionId ?? this.waiter.holderSessionId;
    if (this.waiter.admitted) return;
    const sessionId = this.req.session.sessionId;
    if (this.deps.waiters.countForSession(sessionId) >= this.deps.contention.maxWaitsPerSession) {
      throw this.deps.contention.tooManyWaits({ key: this.req.key, sessionId }, holder, this.ctx);
    }
    this.deps.waiters.admit(this.waiter);
  }

  /** Records the wait in the fleet state the first time; true when the key must be tried once more before parking. */
  async record(): Promise<boolean> {
    if (!this.deps.records || this.waiter.recordedInStore) return false;
    this.waited = true;
    await this.deps.records.begin(this.waiter);
    return this.deps.strategy.retryAfterRecord;
  }

  /** Granted: the milliseconds it waited. */
  succeeded(): number {
    this.granted = true;
    if (this.waited) this.end(this.fellBack ? 'fallback' : 'released');
    return this.elapsedMillis();
  }

  /** Milliseconds since the acquire began. */
  elapsedMillis(): number {
    return this.deps.clock.now() - this.startedAt;
  }

  /** The deadline passed with the key still held. */
  gaveUp(): void {
    if (this.waited) this.end(this.fellBack ? 'fallback' : 'deadline');
  }

  /** Parks until a release, the deadline or an interruption (thrown: deadlock victim, session ended, caller gone). */
  async park(releasesSeen: number, observedRevision: string | undefined): Promise<void> {
    this.waited = true;
    const result = await this.deps.strategy.park({
      waiter: this.waiter,
      releasesSeen,
      ...(observedRevision !== undefined ? { observedRevision } : {}),
      polls: this.polls,
      deadline: this.deadline,
      signal: this.waiter.interrupted,
      fellBack: this.fellBack,
    });
    if (result.fellBackBecause !== undefined) {
      this.fellBack = true;
      this.deps.events.waitFellBack(this.ctx, { key: this.req.key, cause: result.fellBackBecause });
    }
    this.answerInterruption(result.outcome);
    // 'released' and 'deadline' both try again: a deadline try can still win a release that just landed.
  }

  /**
   * However it ended: leaves the registry, passes on a release it did not win, ends its record.
   * Leaving without the key, it answers a grant a release handed it meanwhile: the session holds
   * that one though this request will not say so.
   */
  async close(): Promise<HeldLock | null> {
    this.signal?.removeEventListener('abort', this.callerLeft);
    this.deps.waiters.unregister(this.waiter);
    if (this.granted) {
      // Not awaited: the answer need not wait for the bookkeeping.
      if (this.waiter.recordedInStore) this.deps.records?.end(this.waiter.waitId);
      return null;
    }
    // A wait that ended by a refusal or an error (its session ended, the store failed) is observed too.
    if (this.waited) this.end(this.fellBack ? 'fallback' : 'aborted');
    if (this.recordUncertain) {
      // Its try got no answer: ended without waiting on a store that may not answer either.
      this.recordUncertain = false;
      this.waiter.recordedInStore = false;
      this.deps.records?.end(this.waiter.waitId);
    }
    // Told of a release after its last try and leaving without the key (deadline, abort, refusal):
    // the release may still be unclaimed, so the next waiter in line gets it rather than its recheck timer.
    if (this.waiter.woken || this.waiter.releasesSeen > this.seenAtLastTry) this.deps.waiters.keyReleased(this.req.key);
    return this.finish();
  }

  private answerInterruption(outcome: WaitOutcome): void {
    const { waiter, req, ctx, deps } = this;
    if (waiter.deadlock) {
      this.end('aborted');
      const fact = { ...waiter.deadlock, victimSessionId: req.session.sessionId, key: req.key };
      deps.events.deadlockDetected(ctx, fact);
      deps.insight.deadlockBroken({ at: deps.clock.now(), ...fact });
      throw new DeadlockDetectedError(req.key, waiter.deadlock);
    }
    if (waiter.sessionHasEnded) throw new SessionNotFoundError(req.session.sessionId);
    if (outcome === 'aborted') {
      this.end(this.fellBack ? 'fallback' : 'aborted');
      throw this.signal?.reason instanceof Error ? this.signal.reason : new Error('acquire aborted by the caller');
    }
  }

  /** Reports the wait's end once, however many exits it passes. */
  private end(outcome: WaitOutcome): void {
    if (this.reported) return;
    this.reported = true;
    this.deps.events.waitEnded({ outcome, seconds: (this.deps.clock.now() - this.startedAt) / 1000 });
  }
}
