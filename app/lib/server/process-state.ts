/**
 * State that must be one per console process: the cookie-sealing secret, the
 * live console sessions, the pending sign-in codes and the recent failed
 * sign-ins. Kept on globalThis under a registered symbol because Next bundles
 * each route separately, and a module-level Map could exist once per route bundle.
 *
 * In memory on purpose: a console restart signs everyone out and voids every
 * unused sign-in link (fail closed). One console process serves a deployment;
 * several replicas would need sticky sessions or a shared store (docs/console.md).
 */
import { randomBytes } from 'node:crypto';

export interface PendingSignIn {
  /** The token that minted the code — its issuer — and the one it signs in as. */
  token: string;
  name: string;
  role: 'viewer' | 'operator' | 'unknown';
  /** SHA-256 of the code's secret part (the code's first characters are its id, the key it is kept under). */
  secretHash: Buffer;
  expiresAt: number;
}

interface ConsoleProcessState {
  /** iron-session's seal password (≥ 32 characters) and the CSRF HMAC key. */
  readonly secret: string;
  /** Live console session ids → when they end (epoch ms). Signing out deletes the id. */
  readonly sessions: Map<string, number>;
  /** One-time sign-in codes, by code id → what redeeming one signs in as (signin-codes.ts). */
  readonly codes: Map<string, PendingSignIn>;
  /** Recent failed sign-ins (epoch ms), by client address and by code id (signin-limits.ts). */
  readonly failures: { readonly byAddress: Map<string, number[]>; readonly byCode: Map<string, number[]> };
  /** The clock sign-in codes and sign-in limits read (epoch ms); tests replace it. */
  clock: () => number;
}

const KEY = Symbol.for('holdfast.console.process-state');

export function processState(): ConsoleProcessState {
  const holder = globalThis as { [KEY]?: Partial<ConsoleProcessState> };
  const state = (holder[KEY] ??= {
    secret: randomBytes(32).toString('base64url'),
    sessions: new Map(),
    codes: new Map(),
    failures: { byAddress: new Map(), byCode: new Map() },
    clock: () => Date.now(),
  });
  // A dev server's hot reload keeps globalThis: fill in what an older module version did not set.
  Object.assign(state, {
    failures: state.failures ?? { byAddress: new Map(), byCode: new Map() },
    clock: state.clock ?? (() => Date.now()),
  });
  return state as ConsoleProcessState;
}

/** Now, on the console's clock (epoch ms). */
export function consoleNow(): number {
  return processState().clock();
}
