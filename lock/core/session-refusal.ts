/** The one mapping from a store's session refusal to the error a caller gets (every session-scoped call uses it). */
import { SessionNotFoundError, UnauthenticatedError } from '../errors.js';
import type { SessionRefusal } from '../store/spi.js';

/** Why a session-scoped call did nothing, as the error the caller gets. */
export function refused(refusal: SessionRefusal, sessionId: string): SessionNotFoundError | UnauthenticatedError {
  return refusal.kind === 'session_not_found'
    ? new SessionNotFoundError(sessionId)
    : new UnauthenticatedError(`session ${sessionId} needs its own sessionToken: Authorization: Bearer <sessionToken>`);
}
