/**
 * One-time sign-in codes: what the link `npm start` prints carries instead of the operator token.
 * Whoever holds an admin token asks the console for a code (POST /api/auth/codes with the token as
 * bearer); the code is good for one sign-in within five minutes, on any console replica, and then
 * it is gone — a link found later in browser history or a proxy log signs nobody in.
 *
 * The lock server keeps the codes (K1/K2, issue 25; lock/http/console-sign-in.ts has the rules:
 * a code's id and a digest of its secret, at most 8 pending per token, five wrong secrets lock a
 * code for a minute, a code redeems once fleet-wide). What it keeps of the token is sealed here
 * first, with the console's secret (console-secret.ts), which the lock server never sees: reading
 * the store gives nobody a token, and only a console holding the secret can open what a code
 * carries.
 */
import { sealData, unsealData } from 'iron-session';
import type { Role } from '../api-types';
import { processState } from './process-state';
import { callServer, type UpstreamResult } from './upstream';

export const SIGNIN_CODE_TTL_MILLIS = 5 * 60_000;
/** The shape K1 answers: 32 base64url characters (an 8-character id and a 144-bit secret). */
const CODE = /^[A-Za-z0-9_-]{32}$/;
/**
 * The field a code's seal keeps the token under, which no other seal of the console's secret has:
 * K1 keeps whatever seal its caller sends, and the session cookie is a seal of the same secret
 * holding `token`, so a viewer sending a copied cookie would otherwise get a code signing in as
 * the cookie's token (after that cookie's sign-out, too).
 */
const CODE_SEAL_FIELD = 'signInCodeToken';

export interface SignIn {
  token: string;
  name: string;
  role: Role;
}

export type Redemption =
  | { ok: true; signIn: SignIn }
  /** `lockedForMillis`: too many wrong secrets for this code (the lock server's count, for every replica). */
  | { ok: false; lockedForMillis?: number }
  /** The lock server could not say (unreachable, or answered something unexpected). */
  | { ok: false; upstream: UpstreamResult<never> };

/** Asks the lock server for a code signing in as `token` (which it checks: 401/403 when it refuses it). */
export async function mintSignInCode(token: string): Promise<UpstreamResult<{ code: string; expiresAt: number }>> {
  // Sealed for a little longer than the code lives, so a code is never refused for its seal alone.
  const sealedToken = await sealData({ [CODE_SEAL_FIELD]: token }, { password: processState().secret, ttl: SIGNIN_CODE_TTL_MILLIS / 1000 + 60 });
  return callServer<{ code: string; expiresAt: number }>('/v1/console/codes', { token, method: 'POST', body: { sealedToken } });
}

/** The identity a code signs in as, once; not ok when unknown, used, expired, locked or its secret is wrong. */
export async function redeemSignInCode(code: string): Promise<Redemption> {
  if (!CODE.test(code)) return { ok: false };
  const answer = await callServer<
    { outcome: 'SIGNED_IN'; name: string; role: Role; sealedToken: string } | { outcome: 'LOCKED'; retryAfterMillis: number }
  >('/v1/console/codes/redeem', { method: 'POST', body: { code } });
  if (!answer.ok) return answer.status === 401 ? { ok: false } : { ok: false, upstream: answer as UpstreamResult<never> };
  if (answer.body.outcome === 'LOCKED') return { ok: false, lockedForMillis: answer.body.retryAfterMillis };
  const { name, role, sealedToken } = answer.body;
  // Sealed by a console with another secret (a replica not sharing HOLDFAST_CONSOLE_SECRET_FILE): the code is spent and opens nothing.
  const opened = await unsealData<Record<string, unknown>>(sealedToken, { password: processState().secret }).catch(() => ({}) as Record<string, unknown>);
  const token = opened[CODE_SEAL_FIELD];
  if (typeof token !== 'string' || token.length === 0) return { ok: false };
  return { ok: true, signIn: { token, name, role } };
}
