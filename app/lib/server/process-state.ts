/**
 * State that must be one per console process: the cookie-sealing secret, the
 * live console sessions and the pending sign-in codes. Kept on globalThis under
 * a registered symbol because Next bundles each route separately, and a
 * module-level Map could exist once per route bundle.
 *
 * In memory on purpose: a console restart signs everyone out and voids every
 * unused sign-in link (fail closed). One console process serves a deployment;
 * several replicas would need sticky sessions or a shared store (docs/console.md).
 */
import { randomBytes } from 'node:crypto';

export interface PendingSignIn {
  token: string;
  name: string;
  role: 'viewer' | 'operator' | 'unknown';
  expiresAt: number;
}

interface ConsoleProcessState {
  /** iron-session's seal password (≥ 32 characters) and the CSRF HMAC key. */
  readonly secret: string;
  /** Live console session ids → when they end (epoch ms). Signing out deletes the id. */
  readonly sessions: Map<string, number>;
  /** One-time sign-in codes → what redeeming one signs in as. */
  readonly codes: Map<string, PendingSignIn>;
}

const KEY = Symbol.for('holdfast.console.process-state');

export function processState(): ConsoleProcessState {
  const holder = globalThis as { [KEY]?: ConsoleProcessState };
  holder[KEY] ??= { secret: randomBytes(32).toString('base64url'), sessions: new Map(), codes: new Map() };
  return holder[KEY];
}
