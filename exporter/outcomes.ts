/**
 * How an answered L4 / L5 / L6 request maps to the `outcome` label of its
 * metric. One function decides, and the metric, the span's `lock.outcome` /
 * `error.type` and the S1 SLI all read its answer, so they cannot disagree.
 */
import type { MeasuredRoute } from '../contract/http-events.js';
import { SLO_S1, type AcquireOutcome, type ReleaseOutcome, type RenewOutcome } from '../contract/metric-table.js';

export type { MeasuredRoute } from '../contract/http-events.js';

export type MeasuredOutcome = AcquireOutcome | RenewOutcome | ReleaseOutcome;

/**
 * `code` is the pinned error code of a non-2xx answer (undefined on success); `draining` says the
 * answer was this instance refusing work because it is shutting down (still NOT_LEADER on the wire).
 */
export function outcomeOf(route: MeasuredRoute, status: number, code: string | undefined, draining = false): MeasuredOutcome {
  if (route === 'acquire' && draining && status >= 300) return 'draining';
  if (route === 'acquire') return status < 300 ? 'granted' : acquireFailure(code);
  if (status < 300) return route === 'renew' ? 'renewed' : 'released';
  switch (code) {
    case 'LOCK_LOST':
      return 'lost';
    // A renew or release naming an unknown session or a malformed token is the caller's mistake; so is
    // a key outside its token's scope, and a renewal past the key's policy hold limit (a correct refusal).
    case 'VALIDATION_FAILED':
    case 'SESSION_NOT_FOUND':
    case 'UNAUTHENTICATED':
    case 'FORBIDDEN':
    case 'HOLD_LIMIT_REACHED':
    case 'NOT_FOUND':
      return 'invalid';
    // renew/release have no not_leader value in C4: a backend that cannot take writes is an error there.
    default:
      return 'error';
  }
}

function acquireFailure(code: string | undefined): AcquireOutcome {
  switch (code) {
    // A deadlock victim lost to other sessions' waits: a correct answer, like contention.
    case 'LOCK_CONTENDED':
    case 'DEADLOCK_DETECTED':
      return 'contended';
    case 'CONTENTION_EXCEEDED':
      return 'contention_exceeded';
    case 'SESSION_NOT_FOUND':
      return 'session_not_found';
    // A missing or wrong sessionToken is the caller's mistake, like malformed input; so is a limit
    // other than the key's holders named, and a key outside the scope of the session's token.
    case 'VALIDATION_FAILED':
    case 'LIMIT_MISMATCH':
    case 'UNAUTHENTICATED':
    case 'FORBIDDEN':
    case 'NOT_FOUND':
      return 'invalid';
    case 'NOT_LEADER':
      return 'not_leader';
    default:
      return 'error';
  }
}

/** The success outcome of each route: anything else marks the span failed. */
export const SUCCESS_OUTCOME: Record<MeasuredRoute, MeasuredOutcome> = {
  acquire: 'granted',
  renew: 'renewed',
  release: 'released',
};

/** Whether S1 counts this answer against availability (contention is a correct answer). */
export function isS1Bad(outcome: MeasuredOutcome): boolean {
  return (SLO_S1.badOutcomes as readonly string[]).includes(outcome);
}

/** Whether S1 counts this answer at all (a draining instance's refusals it does not). */
export function isS1Counted(outcome: MeasuredOutcome): boolean {
  return !(SLO_S1.excludedOutcomes as readonly string[]).includes(outcome);
}
