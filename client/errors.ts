/**
 * The SDK's error types. Callers branch on the class (or `code`):
 *
 * - ValidationError   — bad input (client-side check or the server's VALIDATION_FAILED). Never retried.
 * - NotLeaderError    — the backend could not take writes for the whole retry budget.
 * - LockLostError     — a handle's lock is gone (renewal refused, revoked, TTL passed), or a
 *                       re-acquire of a key whose handle is lost.
 *   HoldLimitReachedError — a LockLostError: the renewal was refused because the grant is older
 *                       than its policy's maxHoldMillis (`code` HOLD_LIMIT_REACHED). Not retryable.
 * - SessionLostError  — the session is gone (heartbeat refused, its token refused, or its
 *                       conservative deadline passed).
 * - DeadlockDetectedError — this acquire's wait closed a cycle of waits; the session keeps what it
 *                       holds. Give something back before retrying (acquireAll does this itself).
 * - LimitMismatchError — v3: the key is held under another limit (every holder of a key names the
 *                       same limit; shared counts as 1). Not retryable: the caller's limit is wrong.
 * - FencedOutError    — a fencing token lower than one already seen for the key. Never retried.
 * - ServerError       — any other answer the contract calls non-retryable (401/403/404/500, unknown code).
 * - TransportError    — the server could not be reached for the whole retry budget.
 *
 * Not-granted is not an error: `acquire` returns null.
 */

import { ERROR_CODE, ERROR_TABLE } from './wire.js';

/**
 * The wire codes (contract's error table) the SDK raises as errors of their own; their `code`
 * and `retryable` are the table's. Every other C3 code arrives as a ServerError.
 */
const WIRE_CODES = [
  ERROR_CODE.VALIDATION_FAILED,
  ERROR_CODE.NOT_LEADER,
  ERROR_CODE.LOCK_LOST,
  ERROR_CODE.HOLD_LIMIT_REACHED,
  ERROR_CODE.DEADLOCK_DETECTED,
  ERROR_CODE.LIMIT_MISMATCH,
] as const;
type SdkWireCode = (typeof WIRE_CODES)[number];

/** `code` of every SDK error: one of the wire codes above, or a condition of the SDK's own that no server answer names. */
export type ClientErrorCode = SdkWireCode | 'SESSION_LOST' | 'FENCED_OUT' | 'SERVER_ERROR' | 'TRANSPORT_ERROR';

export abstract class HoldfastClientError extends Error {
  abstract readonly code: ClientErrorCode;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

export class ValidationError extends HoldfastClientError {
  readonly code = ERROR_CODE.VALIDATION_FAILED;
  readonly retryable = ERROR_TABLE.VALIDATION_FAILED.retryable;
  /** Set when the server, not the SDK, rejected the input. */
  readonly requestId: string | undefined;
  constructor(message: string, requestId?: string) {
    super(message);
    this.requestId = requestId;
  }
}

export class NotLeaderError extends HoldfastClientError {
  readonly code = ERROR_CODE.NOT_LEADER;
  /** The backend may take writes again later (after the SDK's own retry budget ran out). */
  readonly retryable = ERROR_TABLE.NOT_LEADER.retryable;
  readonly requestId: string | undefined;
  constructor(message: string, requestId?: string) {
    super(message);
    this.requestId = requestId;
  }
}

/** The wire codes a lost handle's error carries: the lock is gone, or (v3 policies) it may not be kept longer. */
export type LockLossCode = typeof ERROR_CODE.LOCK_LOST | typeof ERROR_CODE.HOLD_LIMIT_REACHED;

export class LockLostError extends HoldfastClientError {
  readonly code: LockLossCode = ERROR_CODE.LOCK_LOST;
  readonly retryable: boolean = ERROR_TABLE.LOCK_LOST.retryable;
  constructor(
    readonly key: string,
    readonly fencingToken: string,
    readonly why: string,
  ) {
    super(`lock ${JSON.stringify(key)} (token ${fencingToken}) is lost: ${why}`);
  }
}

/**
 * The server refused to renew the grant because it is older than its policy's `maxHoldMillis`
 * (409 HOLD_LIMIT_REACHED, SPEC v3 "teams"). The grant ends at its TTL; renewing again cannot help,
 * so the SDK stops vouching at once, as for LOCK_LOST. Finish or hand over the work and acquire anew.
 */
export class HoldLimitReachedError extends LockLostError {
  override readonly code = ERROR_CODE.HOLD_LIMIT_REACHED;
  override readonly retryable = ERROR_TABLE.HOLD_LIMIT_REACHED.retryable;
  /** The server's message (names the policy and its limit). */
  readonly serverMessage: string;
  readonly requestId: string | undefined;
  constructor(key: string, fencingToken: string, serverMessage: string, requestId?: string) {
    super(key, fencingToken, `the server refused the renewal: the hold limit of its policy is reached (${serverMessage})`);
    this.serverMessage = serverMessage;
    this.requestId = requestId;
  }
}

/**
 * `unauthenticated`: the server answered 401 to one of the session's own calls (L2–L6): it
 * does not accept the session's token, so nothing this process sends can keep the session or
 * its locks; the SDK stops vouching at once, exactly as for `not_found`.
 */
export type SessionLossCause = 'not_found' | 'deadline' | 'unauthenticated';

export class SessionLostError extends HoldfastClientError {
  readonly code = 'SESSION_LOST' as const;
  constructor(
    readonly sessionId: string,
    /** Why: refused by the server, deadline passed, or closed by this process. */
    readonly lossCause: SessionLossCause | 'closed',
  ) {
    super(
      lossCause === 'closed'
        ? `session ${sessionId} is closed`
        : lossCause === 'not_found'
          ? `session ${sessionId} is gone on the server (expired, closed or killed)`
          : lossCause === 'unauthenticated'
            ? `session ${sessionId} is unusable: the server refused its session token (401)`
            : `session ${sessionId} passed its conservative deadline without a successful heartbeat`,
    );
  }
}

export class FencedOutError extends HoldfastClientError {
  readonly code = 'FENCED_OUT' as const;
  constructor(
    readonly key: string,
    readonly fencingToken: string,
    readonly highestSeen: string,
  ) {
    super(
      `fencing token ${fencingToken} for ${JSON.stringify(key)} is below the highest seen (${highestSeen})`,
    );
  }
}

export class DeadlockDetectedError extends HoldfastClientError {
  readonly code = ERROR_CODE.DEADLOCK_DETECTED;
  /** Not as is: give back a lock this session holds first (`acquireAll` does). */
  readonly retryable = ERROR_TABLE.DEADLOCK_DETECTED.retryable;
  constructor(
    readonly key: string,
    message: string,
    readonly requestId?: string,
  ) {
    super(`acquiring ${JSON.stringify(key)} would deadlock (${message}); give back a lock this session holds, then retry`);
  }
}

/**
 * v3 (issue 23): the key is held under another limit than this acquire named (409 LIMIT_MISMATCH):
 * every holder of a key names the same limit, and a shared or mutex holding counts as limit 1.
 * Nothing changed on the server and no wait was recorded. Not retryable as is: waiting does not
 * help while the key stays held under its limit — fix the limit (one constant per key, shared by
 * every process that takes it).
 */
export class LimitMismatchError extends HoldfastClientError {
  readonly code = ERROR_CODE.LIMIT_MISMATCH;
  readonly retryable = ERROR_TABLE.LIMIT_MISMATCH.retryable;
  constructor(
    readonly key: string,
    /** The limit this acquire named (1 for a mutex or a shared acquire). */
    readonly limit: number,
    /** The server's message (names the key's own limit). */
    readonly serverMessage: string,
    readonly requestId?: string,
  ) {
    super(`${JSON.stringify(key)} is held under another limit than ${limit} (${serverMessage}); every holder of a key must name the same limit`);
  }
}

export class ServerError extends HoldfastClientError {
  readonly code = 'SERVER_ERROR' as const;
  constructor(
    readonly status: number,
    /** The C3 error code from the body, or `UNKNOWN` when the body was not a C3 error. */
    readonly serverCode: string,
    message: string,
    readonly requestId?: string,
  ) {
    super(`${status} ${serverCode}: ${message}`);
  }
}

export class TransportError extends HoldfastClientError {
  readonly code = 'TRANSPORT_ERROR' as const;
  constructor(message: string, cause: unknown) {
    super(message, { cause });
  }
}
