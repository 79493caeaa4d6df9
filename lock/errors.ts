/**
 * One error type per row of the C3 error table. Each knows its HTTP status,
 * pinned code and retryability so the HTTP layer maps them in one place.
 */

import type { ErrorBody, ErrorCode } from '../contract/errors.js';

export type { ErrorBody, ErrorCode };

export abstract class HoldfastError extends Error {
  abstract readonly status: number;
  abstract readonly code: ErrorCode;
  abstract readonly retryable: boolean;
  /** Seconds, sent as Retry-After on 429 and 503. */
  readonly retryAfterSeconds?: number;

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, retryable: this.retryable } };
  }
}

export class ValidationFailedError extends HoldfastError {
  readonly status = 400;
  readonly code = 'VALIDATION_FAILED' as const;
  readonly retryable = false;
}

export class UnauthenticatedError extends HoldfastError {
  readonly status = 401;
  readonly code = 'UNAUTHENTICATED' as const;
  readonly retryable = false;
}

export class ForbiddenError extends HoldfastError {
  readonly status = 403;
  readonly code = 'FORBIDDEN' as const;
  readonly retryable = false;
}

export class SessionNotFoundError extends HoldfastError {
  readonly status = 404;
  readonly code = 'SESSION_NOT_FOUND' as const;
  readonly retryable = false;
  constructor(sessionId: string) {
    super(`session ${sessionId} is unknown, expired, closed or killed`);
  }
}

/** An unknown route or method; not in the brief's table (see C3 notes). */
export class RouteNotFoundError extends HoldfastError {
  readonly status = 404;
  readonly code = 'NOT_FOUND' as const;
  readonly retryable = false;
}

export class LockContendedError extends HoldfastError {
  readonly status = 409;
  readonly code = 'LOCK_CONTENDED' as const;
  readonly retryable = true;
  constructor(
    key: string,
    readonly holderSessionId?: string,
  ) {
    super(`lock ${JSON.stringify(key)} is held by another session`);
  }
}

export class LockLostError extends HoldfastError {
  readonly status = 409;
  readonly code = 'LOCK_LOST' as const;
  readonly retryable = false;
  constructor(key: string) {
    super(`lock ${JSON.stringify(key)} is no longer held with that fencing token`);
  }
}

/** This wait closed a cycle of waits and was the youngest in it; the session keeps what it holds. */
export class DeadlockDetectedError extends HoldfastError {
  readonly status = 409;
  readonly code = 'DEADLOCK_DETECTED' as const;
  readonly retryable = false;
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
  readonly status = 429;
  readonly code = 'CONTENTION_EXCEEDED' as const;
  readonly retryable = true;
  constructor(
    message: string,
    override readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

export class NotLeaderError extends HoldfastError {
  readonly status = 503;
  readonly code = 'NOT_LEADER' as const;
  readonly retryable = true;
  override readonly retryAfterSeconds = 1;
}

export class InternalError extends HoldfastError {
  readonly status = 500;
  readonly code = 'INTERNAL' as const;
  readonly retryable = false;
}
