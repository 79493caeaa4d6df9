/**
 * One-time sign-in codes: what the link `npm start` prints carries instead of
 * the operator token. Whoever holds an admin token asks the console for a code
 * (POST /api/auth/codes with the token as bearer); the code is good for one
 * sign-in within SIGNIN_CODE_TTL_MILLIS, and then it is gone — a link found
 * later in browser history or a proxy log signs nobody in.
 */
import { randomBytes } from 'node:crypto';
import { processState, type PendingSignIn } from './process-state';

export const SIGNIN_CODE_TTL_MILLIS = 5 * 60_000;
/** Bounds memory if something mints codes in a loop; the oldest pending code goes first. */
const MAX_PENDING_CODES = 64;

export function mintSignInCode(identity: Omit<PendingSignIn, 'expiresAt'>, now = Date.now()): { code: string; expiresAt: number } {
  const { codes } = processState();
  prune(codes, now);
  while (codes.size >= MAX_PENDING_CODES) codes.delete(codes.keys().next().value!);
  const code = randomBytes(24).toString('base64url');
  const expiresAt = now + SIGNIN_CODE_TTL_MILLIS;
  codes.set(code, { ...identity, expiresAt });
  return { code, expiresAt };
}

/** The identity a code signs in as, once; null when unknown, used or expired. */
export function redeemSignInCode(code: string, now = Date.now()): Omit<PendingSignIn, 'expiresAt'> | null {
  const { codes } = processState();
  const pending = codes.get(code);
  codes.delete(code);
  if (pending === undefined || pending.expiresAt <= now) return null;
  return { token: pending.token, name: pending.name, role: pending.role };
}

function prune(codes: Map<string, PendingSignIn>, now: number): void {
  for (const [code, pending] of codes) if (pending.expiresAt <= now) codes.delete(code);
}
