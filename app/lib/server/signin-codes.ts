/**
 * One-time sign-in codes: what the link `npm start` prints carries instead of
 * the operator token. Whoever holds an admin token asks the console for a code
 * (POST /api/auth/codes with the token as bearer); the code is good for one
 * sign-in within SIGNIN_CODE_TTL_MILLIS, and then it is gone — a link found
 * later in browser history or a proxy log signs nobody in.
 *
 * A code is 32 base64url characters: the first CODE_ID_CHARS (48 random bits)
 * are its id, the key it is kept under, and the other 24 (144 random bits) its
 * secret, kept only as a SHA-256 digest. The id lets wrong guesses be counted
 * per code (signin-limits.ts): a wrong secret for a pending code counts against
 * that code and leaves it pending for its owner.
 *
 * Pending codes are kept per issuer — the token that minted them, which is also
 * the token they sign in as: each issuer has at most MAX_PENDING_CODES_PER_ISSUER
 * (its own oldest goes first), so another token holder minting codes in a loop
 * never pushes out the operator's link.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { consoleNow, processState, type PendingSignIn } from './process-state';

export const SIGNIN_CODE_TTL_MILLIS = 5 * 60_000;
/** Pending codes one issuer may have; minting one more drops that issuer's oldest. */
export const MAX_PENDING_CODES_PER_ISSUER = 8;
/**
 * Bounds memory across issuers (tokens the lock server accepts, so few): at the cap,
 * the issuer with the most pending codes loses its oldest, never someone with fewer.
 */
export const MAX_PENDING_CODES = 1_024;
export const CODE_ID_CHARS = 8;

export type SignIn = Omit<PendingSignIn, 'expiresAt' | 'secretHash'>;

export type Redemption =
  | { ok: true; signIn: SignIn }
  /** `wrongSecretFor`: the id of the pending code whose secret this was not (a guess at it). */
  | { ok: false; wrongSecretFor?: string };

export function mintSignInCode(identity: SignIn, now = consoleNow()): { code: string; expiresAt: number } {
  const { codes } = processState();
  prune(codes, now);
  const mine = [...codes].filter(([, pending]) => pending.token === identity.token).map(([id]) => id);
  while (mine.length >= MAX_PENDING_CODES_PER_ISSUER) codes.delete(mine.shift()!);
  if (codes.size >= MAX_PENDING_CODES) dropOldestOfLargestIssuer(codes);
  let code: string;
  do code = randomBytes(24).toString('base64url');
  while (codes.has(codeIdOf(code)));
  const expiresAt = now + SIGNIN_CODE_TTL_MILLIS;
  codes.set(codeIdOf(code), { ...identity, secretHash: digest(code.slice(CODE_ID_CHARS)), expiresAt });
  return { code, expiresAt };
}

/** The identity a code signs in as, once; not ok when unknown, used, expired or its secret is wrong. */
export function redeemSignInCode(code: string, now = consoleNow()): Redemption {
  const { codes } = processState();
  const id = codeIdOf(code);
  const pending = codes.get(id);
  if (pending === undefined || code.length <= CODE_ID_CHARS) return { ok: false };
  if (pending.expiresAt <= now) {
    codes.delete(id);
    return { ok: false };
  }
  if (!timingSafeEqual(digest(code.slice(CODE_ID_CHARS)), pending.secretHash)) return { ok: false, wrongSecretFor: id };
  codes.delete(id);
  return { ok: true, signIn: { token: pending.token, name: pending.name, role: pending.role } };
}

export function codeIdOf(code: string): string {
  return code.slice(0, CODE_ID_CHARS);
}

function digest(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

function prune(codes: Map<string, PendingSignIn>, now: number): void {
  for (const [id, pending] of codes) if (pending.expiresAt <= now) codes.delete(id);
}

function dropOldestOfLargestIssuer(codes: Map<string, PendingSignIn>): void {
  const byIssuer = new Map<string, string[]>();
  for (const [id, pending] of codes) {
    const ids = byIssuer.get(pending.token);
    if (ids) ids.push(id);
    else byIssuer.set(pending.token, [id]);
  }
  let largest: string[] = [];
  for (const ids of byIssuer.values()) if (ids.length > largest.length) largest = ids;
  if (largest[0] !== undefined) codes.delete(largest[0]);
}
