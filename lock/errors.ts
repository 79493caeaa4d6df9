/**
 * One error type per row of the C3 error table. Each names its code; its HTTP
 * status and retryability are read from contract's table (contract/error-table.ts),
 * so the HTTP layer maps every failure in one place and no status is written twice.
 */

import { ERROR_CODE, ERROR_TABLE, type ErrorBody, type ErrorCode } from '../contract/errors.js';

export type { ErrorBody, ErrorCode };

export abstract class HoldfastError extends Error {
  abstract readonly code: ErrorCode;
  /** Seconds, sent as Retry-After on the codes whose row says so (429 and 503). */
  readonly retryAfterSeconds?: number;

  /** The HTTP status of this code (contract's error table). */
  get status(): number {
    return ERROR_TABLE[this.code].status;
  }

  /** Whether the same request may succeed later (contract's error table). */
  get retryable(): boolean {
    return ERROR_TABLE[this.code].retryable;
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, retryable: this.retryable } };
  }
}

export class ValidationFailedError extends HoldfastError {
  readonly code = ERROR_CODE.VALIDATION_FAILED;
}

export class UnauthenticatedError extends HoldfastError {
  readonly code = ERROR_CODE.UNAUTHENTICATED;
}

export class ForbiddenError extends HoldfastError {
  readonly code = ERROR_CODE.FORBIDDEN;
}

export class SessionNotFoundError extends HoldfastError {
  readonly code = ERROR_CODE.SESSION_NOT_FOUND;
  constructor(sessionId: string) {
    super(`session ${sessionId} is unknown, expired, closed or killed`);
  }
}

/** An unknown route or method; not in the brief's table (see C3 notes). */
export class RouteNotFoundError extends HoldfastError {
  readonly code = ERROR_CODE.NOT_FOUND;
}

export class LockContendedError extends HoldfastError {
  readonly code = ERROR_CODE.LOCK_CONTENDED;
  constructor(
    key: string,
    readonly holderSessionId?: string,
  ) {
    super(`lock ${JSON.stringify(key)} is held by another session`);
  }
}

export class LimitMismatchError extends HoldfastError {
  readonly code = ERROR_CODE.LIMIT_MISMATCH;
  constructor(key: string, asked: number, keyLimit: number) {
    super(
      `lock ${JSON.stringify(key)} is held with limit ${keyLimit}, not ${asked}: every holder of a key names the same limit ` +
        '(a shared grant counts as 1); use the key\'s limit, or another key',
    );
  }
}

export class LockLostError extends HoldfastError {
  readonly code = ERROR_CODE.LOCK_LOST;
  constructor(key: string) {
    super(`lock ${JSON.stringify(key)} is no longer held with that fencing token`);
  }
}

/** The grant is older than its policy allows: not renewed, it ends at its TTL (SPEC v3 teams). */
export class HoldLimitReachedError extends HoldfastError {
  readonly code = ERROR_CODE.HOLD_LIMIT_REACHED;
  constructor(key: string, maxHoldMillis: number, policy: string) {
    super(
      `lock ${JSON.stringify(key)} was granted at least ${maxHoldMillis} ms ago, the longest policy ${JSON.stringify(policy)} allows a hold: ` +
        'it is not renewed and ends at its TTL; release it and acquire again',
    );
  }
}

/** This wait closed a cycle of waits and was the youngest in it; the session keeps what it holds. */
export class DeadlockDetectedError extends HoldfastError {
  readonly code = ERROR_CODE.DEADLOCK_DETECTED;
  constructor(
    key: string,
    readonly cycle: { sessions: string[]; keys: string[] },
  ) {
    super(
      `waiting for ${JSON.stringify(key)} closed a cycle of waits (sessions ${cycle.sessions.join(' → ')}); ` +
        'give back what this session holds, then retry',
    );
  }
}

export class ContentionExceededError extends HoldfastError {
  readonly code = ERROR_CODE.CONTENTION_EXCEEDED;
  constructor(
    message: string,
    override readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

export class NotLeaderError extends HoldfastError {
  readonly code = ERROR_CODE.NOT_LEADER;
  override readonly retryAfterSeconds = 1;
}

/**
 * NOT_LEADER from an instance that is draining (SIGTERM): the same answer on the wire, so every
 * client retries it elsewhere, but counted apart (outcome `draining`, outside S1).
 */
export class DrainingError extends NotLeaderError {}

/**
 * The store was restored from a backup (or copied) and its token sequence not advanced: it would
 * re-issue tokens, so writes are refused and reads served (issue 25, lock/store/restore-guard.ts).
 * NOT_LEADER on the wire — the store cannot take writes — but not a NotLeaderError: the store
 * answers, so it must not be counted down (that would refuse reads too).
 */
export class StoreRestoredError extends HoldfastError {
  readonly code = ERROR_CODE.NOT_LEADER;
  override readonly retryAfterSeconds = 5;
  constructor() {
    super(STORE_RESTORED_MESSAGE);
  }
}

/** The pinned message of StoreRestoredError (C3 "Restores"): it names the one command to run. */
export const STORE_RESTORED_MESSAGE = 'store restored from a backup: run `holdfast tokens advance`';

export class InternalError extends HoldfastError {
  readonly code = ERROR_CODE.INTERNAL;
}
