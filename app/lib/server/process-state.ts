/**
 * State that is one per console process: the secret (console-secret.ts: shared by every replica
 * when HOLDFAST_CONSOLE_SECRET_FILE is set) and the recent failed sign-ins per client address.
 * Kept on globalThis under a registered symbol because Next bundles each route separately, and a
 * module-level Map could exist once per route bundle.
 *
 * Sign-in codes and console sessions are not here: the lock server keeps them (K1–K5, issue 25),
 * so a restart keeps everyone signed in and replicas share them. The per-address failure counts
 * stay per process on purpose (docs/console.md): each replica limits what reaches it.
 */
import { loadConsoleSecret } from './console-secret';

interface ConsoleProcessState {
  /** iron-session's seal password (≥ 32 characters) and the CSRF HMAC key. */
  readonly secret: string;
  /** Recent failed sign-ins (epoch ms), by client address (signin-limits.ts). */
  readonly failures: { readonly byAddress: Map<string, number[]> };
  /** The clock sign-in codes and sign-in limits read (epoch ms); tests replace it. */
  clock: () => number;
}

const KEY = Symbol.for('holdfast.console.process-state');

export function processState(): ConsoleProcessState {
  const holder = globalThis as { [KEY]?: Partial<ConsoleProcessState> };
  const state = (holder[KEY] ??= {
    secret: loadConsoleSecret(),
    failures: { byAddress: new Map() },
    clock: () => Date.now(),
  });
  // A dev server's hot reload keeps globalThis: fill in what an older module version did not set.
  Object.assign(state, {
    failures: state.failures ?? { byAddress: new Map() },
    clock: state.clock ?? (() => Date.now()),
  });
  return state as ConsoleProcessState;
}

/** Now, on the console's clock (epoch ms). */
export function consoleNow(): number {
  return processState().clock();
}
