/**
 * The session capability: L1 hands out a bearer token (256 random bits,
 * base64url) once; stores keep only its SHA-256, and every session-scoped call
 * presents the token, hashed here before it goes anywhere near a store.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { SessionCredential } from '../store/spi.js';

export function newSessionToken(): string {
  return randomBytes(32).toString('base64url');
}

export function hashSessionToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * A missing token becomes a hash no stored token can have, so the store (not the
 * caller's omission) decides between "no such session" (404) and "wrong token" (401).
 */
export function sessionCredential(sessionId: string, presentedToken: string | undefined): SessionCredential {
  return { sessionId, tokenHash: presentedToken === undefined ? 'none' : hashSessionToken(presentedToken) };
}
