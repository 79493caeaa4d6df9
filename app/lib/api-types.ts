/**
 * Wire types the console exchanges with the lock server (contract C3), imported
 * as types only so no lock-service code ends up in the console bundle, plus the
 * console's own shapes for its route handlers.
 */
export type {
  AuditEntry,
  FencingToken,
  LockHolder,
  LockInfo,
  LockMode,
  LockOutcome,
  Page,
  SessionInfo,
} from '../../contract/records';

/** `unknown`: the server has no whoami route, so only the server's answer to an action tells. */
export type Role = 'viewer' | 'operator' | 'unknown';

/** Who the console believes is signed in: the token's name and role as the server reported them. */
export interface Identity {
  name: string;
  role: Role;
  /** Sent back in the x-csrf-token header on every admin action. */
  csrfToken: string;
}

/** The console's error body; `code` is the server's C3 code or one of the console's own. */
export interface ConsoleError {
  error: { code: string; message: string; retryable: boolean };
}

/** Result of the audit chain verification, as the console shows it. */
export type AuditVerification =
  | { state: 'verified'; entries: number }
  | { state: 'broken'; entries: number; brokenAt: string; problem: string }
  | { state: 'unavailable'; message: string };
