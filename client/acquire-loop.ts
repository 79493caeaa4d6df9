/**
 * The bounded retry loop behind one acquire of one key.
 *
 * - The deadline is fixed by the caller, once, at entry.
 * - LOCK_CONTENDED / CONTENTION_EXCEEDED: sleep a full-jitter delay (at least
 *   the server's Retry-After on 429) and retry only if the remaining budget
 *   exceeds the delay plus one estimated round trip — otherwise not granted.
 *   A LOCK_CONTENDED that ends a server-side wait the server ran to its end is
 *   retried at once: the wait paced it, and the acquire is waiting on the server
 *   again within a round trip (v3: an exclusive wait that lapses between two L4s
 *   lets new shared holders in ahead of it — writer preference needs it kept).
 * - NOT_LEADER or no answer: retry after a short fixed floor (plus jitter), still
 *   inside the budget; when the budget runs out, throw NotLeaderError / TransportError.
 *   When the server's latest answer during this acquire was NOT_LEADER, running out on
 *   an unanswered attempt still throws NotLeaderError: what the server said explains
 *   the outage better than the attempt that happened to be last.
 * - SESSION_NOT_FOUND, or UNAUTHENTICATED (the server refuses the session's
 *   token): the session is unusable — SessionLostError.
 * - DEADLOCK_DETECTED: this wait closed a cycle; retrying while holding the same
 *   locks would close it again — DeadlockDetectedError, never retried here.
 * - LIMIT_MISMATCH (v3): the key is held under another limit; asking again with the
 *   same limit cannot succeed while it is — LimitMismatchError, never retried here.
 * - VALIDATION_FAILED or any other non-retryable answer: throw at once.
 * - A FencedOutError from the grant check is thrown, never retried.
 * - A grant the callee discards (an existing grant it already knew, or one too old
 *   to vouch for — see LockSession) is retried like contention.
 * - At most `maxAttempts` L4 calls; a server-side wait is trimmed to fit the budget and
 *   to `longestWaitMillis` (half the life the SDK can vouch for of the grant it may bring),
 *   and a request still unanswered a grace period after the deadline is abandoned
 *   (a grant it may have made expires with its TTL or the session).
 *
 * L4 is idempotent per session (a retry returns the existing grant), so a
 * retry after an unanswered attempt cannot contend with itself.
 */
import { notLeaderBeside, type ApiResult } from './api.js';
import type { Backoff } from './backoff.js';
import { startTimer, type Clock } from './clock.js';
import {
  DeadlockDetectedError,
  HoldfastClientError,
  LimitMismatchError,
  NotLeaderError,
  ServerError,
  TransportError,
  ValidationError,
} from './errors.js';
import type { SessionLossCause } from './errors.js';
import type { AcquirePolicy } from './policy.js';
import type { RoundTripEstimator } from './rtt.js';
import { TRANSIENT_FLOOR_MILLIS } from './runtime.js';
import { returnRequestController, takeRequestController } from './request-signals.js';
import type { LockGrant } from './wire.js';

export interface AcquireLoopParams {
  key: string;
  /** The limit this acquire names (1: a mutex or shared), for a LIMIT_MISMATCH answer's error. */
  limit: number;
  clock: Clock;
  backoff: Backoff;
  rtt: RoundTripEstimator;
  policy: AcquirePolicy;
  /** Monotonic ms; computed once by the caller. */
  deadline: number;
  /** The longest server-side wait of one L4 (runtime.ts `longestVouchedWaitMillis` of the TTL asked). */
  longestWaitMillis: number;
  /** How long one L4 may go unanswered beyond its server-side wait before it is retried. */
  requestTimeoutMillis: number;
  signal: AbortSignal | undefined;
  /** Count of L4 calls made, readable by the caller even when the loop throws. */
  progress: { attempts: number };
  /** Throws when the session can no longer acquire (lost or closed). */
  assertUsable(): void;
  /** One L4 with the given server-side wait; `timeout` aborts a request that outlives the budget. */
  send(waitMillis: number, timeout: AbortSignal): Promise<ApiResult<LockGrant>>;
  /**
   * Judge a grant before vouching for it: `keep`, or `discard` (already
   * released by the callee) to retry for a fresh grant like after contention.
   * `sentAt` is the earliest this call could have been granted (see below).
   * May throw (FencedOutError), which ends the loop.
   */
  vet(grant: LockGrant, sentAt: number): Promise<'keep' | 'discard'>;
  /** An attempt sent at `sentAt` got no answer: the server may have granted it. */
  unanswered(sentAt: number): void;
  /** Another session holds the key now, so no earlier unanswered grant of ours survives. */
  heldByOther(): void;
  /** The server refused the session (gone, or its token refused): mark it lost, return the error to throw. */
  sessionRefused(cause: Extract<SessionLossCause, 'not_found' | 'unauthenticated'>): Error;
  /**
   * The caller's abort left the attempt sent at `sentAt` in flight: the server may grant it, so it
   * counts as unanswered, and `late` (bounded by the request's own timeout, which keeps running)
   * is the callee's to settle: a grant in it is released, since nobody will hold it.
   */
  abandoned(sentAt: number, late: Promise<ApiResult<LockGrant>>): void;
}

export type AcquireLoopResult = { granted: true; grant: LockGrant } | { granted: false };

export async function runAcquireLoop(p: AcquireLoopParams): Promise<AcquireLoopResult> {
  const { clock, policy, deadline, signal } = p;
  let earliestUnanswered: number | undefined;
  let notLeader: { message: string; requestId: string | undefined } | undefined;
  for (;;) {
    signal?.throwIfAborted();
    p.assertUsable();
    const remaining = deadline - clock.now();
    const serverWait = Math.max(0, Math.min(policy.waitMillis, p.longestWaitMillis, Math.floor(remaining - p.rtt.millis)));
    p.progress.attempts += 1;
    const attempt = p.progress.attempts;
    const sentAt = clock.now();
    let answer: ApiResult<LockGrant>;
    let exhausted: () => AcquireLoopResult;
    let delay: number;
    const timeout = takeRequestController();
    const giveUpAt = Math.min(deadline + requestGraceMillis(p.rtt), sentAt + serverWait + p.requestTimeoutMillis);
    const timer = startTimer(clock, giveUpAt - sentAt, () =>
      timeout.abort(new DOMException('acquire budget spent while the request was unanswered', 'TimeoutError')),
    );
    let abandoned = false;
    try {
      answer = await untilAborted(p.send(serverWait, timeout.signal), signal, (late) => {
        // The request's timeout still bounds it: an abandoned L4 must not hold its socket forever.
        abandoned = true;
        p.abandoned(sentAt, late.finally(() => timer.cancel()));
      });
    } catch (error) {
      signal?.throwIfAborted();
      if (!isTransportFailure(error)) throw error;
      earliestUnanswered ??= sentAt;
      p.unanswered(sentAt);
      notLeader = notLeaderBeside(error) ?? notLeader;
      const said = notLeader;
      const failure = said
        ? new NotLeaderError(said.message, said.requestId)
        : new TransportError('the lock server did not answer the acquire', error);
      delay = Math.max(TRANSIENT_FLOOR_MILLIS, p.backoff.delay(attempt - 1));
      exhausted = () => {
        throw failure;
      };
      if (!shouldRetry(p, attempt, delay)) return exhausted();
      await clock.sleep(delay, signal);
      continue;
    } finally {
      if (!abandoned) timer.cancel();
    }
    // Answered, so no request holds the signal any more (an unanswered one may still be in flight).
    returnRequestController(timeout);
    p.rtt.observe(clock.now() - sentAt);
    // Only the server's latest word explains a later silence.
    if (answer.ok || answer.code !== 'NOT_LEADER') notLeader = undefined;
    if (answer.ok) {
      if ((await p.vet(answer.value, earliestUnanswered ?? sentAt)) === 'keep') {
        return { granted: true, grant: answer.value };
      }
      delay = p.backoff.delay(attempt - 1);
      exhausted = () => ({ granted: false });
      if (!shouldRetry(p, attempt, delay)) return exhausted();
      await clock.sleep(delay, signal);
      continue;
    }

    switch (answer.code) {
      case 'LOCK_CONTENDED':
        p.heldByOther();
        delay = serverWait > 0 && clock.now() - sentAt >= serverWait ? 0 : p.backoff.delay(attempt - 1);
        exhausted = () => ({ granted: false });
        break;
      case 'CONTENTION_EXCEEDED':
        delay = Math.max(p.backoff.delay(attempt - 1), answer.retryAfterMillis ?? 0);
        exhausted = () => ({ granted: false });
        break;
      case 'NOT_LEADER':
        notLeader = { message: answer.message, requestId: answer.requestId };
        delay = Math.max(TRANSIENT_FLOOR_MILLIS, p.backoff.delay(attempt - 1));
        exhausted = () => {
          throw new NotLeaderError(answer.message, answer.requestId);
        };
        break;
      case 'SESSION_NOT_FOUND':
        throw p.sessionRefused('not_found');
      case 'UNAUTHENTICATED':
        throw p.sessionRefused('unauthenticated');
      case 'DEADLOCK_DETECTED':
        throw new DeadlockDetectedError(p.key, answer.message, answer.requestId);
      case 'LIMIT_MISMATCH':
        throw new LimitMismatchError(p.key, p.limit, answer.message, answer.requestId);
      case 'VALIDATION_FAILED':
        throw new ValidationError(answer.message, answer.requestId);
      default:
        throw new ServerError(answer.status, answer.code, answer.message, answer.requestId);
    }
    if (!shouldRetry(p, attempt, delay)) return exhausted();
    await clock.sleep(delay, signal);
  }
}

/** How long past the deadline an in-flight L4 may still answer. */
function requestGraceMillis(rtt: RoundTripEstimator): number {
  return Math.max(250, 2 * rtt.millis);
}

/** Another attempt only if allowed and its answer can still arrive before the deadline. */
function shouldRetry(p: AcquireLoopParams, attempt: number, delay: number): boolean {
  if (attempt >= p.policy.maxAttempts) return false;
  return p.deadline - p.clock.now() > delay + p.rtt.millis;
}

/**
 * Await `work`, but stop waiting when `signal` aborts. The request is not
 * cancelled — its outcome is unknown to the server — so `onAbandoned` gets
 * the late promise to clean up after it.
 */
function untilAborted<T>(
  work: Promise<T>,
  signal: AbortSignal | undefined,
  onAbandoned: (late: Promise<T>) => void,
): Promise<T> {
  if (signal === undefined) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      onAbandoned(work);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Errors thrown by the transport itself (no HTTP answer), as opposed to the SDK's own typed errors. */
function isTransportFailure(error: unknown): boolean {
  return !(error instanceof HoldfastClientError);
}
