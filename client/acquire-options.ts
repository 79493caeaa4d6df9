/**
 * Acquire options are checked by name at run time too. TypeScript refuses an unknown one at compile
 * time, but a JavaScript caller (or a TypeScript one through `any` or a build that does not typecheck)
 * would otherwise get a silently different acquire: `waitMillis` beside the options, where nothing
 * reads it, polls from the client instead of waiting on the server.
 */
import { ValidationError } from './errors.js';
import type { AcquirePolicy, AcquirePolicyInit } from './policy.js';
import type { LockMode } from './wire.js';

/** What an acquire may say; any other option, set to a value, is a ValidationError before anything is sent. */
export interface AcquireOptions {
  /** Lock TTL in ms, within C3's bounds (`LOCK_TTL_MILLIS` in contract/wire-rules.ts); the server's default when omitted. */
  ttlMillis?: number;
  policy?: AcquirePolicy | AcquirePolicyInit;
  /** Aborting stops waiting (the call rejects with the signal's reason) and releases whatever was taken. */
  signal?: AbortSignal;
  /**
   * v3: stored with the grant (a leader's address, say; ≤ 4096 bytes of UTF-8, the server's rule),
   * read back as `handle.value` and in LockInfo's `holders`. A key this session already holds keeps
   * its value (the server answers the existing grant); `handle.proclaim` replaces it.
   */
  value?: string;
  /**
   * v3: `exclusive` (default: a mutex, or a semaphore with `limit`) or `shared` (a reader: shared
   * holders overlap, an exclusive holder excludes them all; a waiting exclusive acquire keeps new
   * shared ones out, so writers do not starve). `handle.mode` is the grant's.
   */
  mode?: LockMode;
  /**
   * v3: holders the key admits at once, an integer 1–1000 (default 1, a mutex; > 1 a semaphore,
   * each holder with its own grant and fencing token). Every holder of a key names the same limit:
   * another one while the key is held is LimitMismatchError. Not with `mode: 'shared'` (ValidationError).
   */
  limit?: number;
}

const ACQUIRE_OPTIONS = ['ttlMillis', 'policy', 'signal', 'value', 'mode', 'limit'] as const satisfies readonly (keyof AcquireOptions)[];
/** Compile-time: the list above names every field of AcquireOptions. */
const EVERY_OPTION_LISTED: Exclude<keyof AcquireOptions, (typeof ACQUIRE_OPTIONS)[number]> extends never ? true : never = true;
void EVERY_OPTION_LISTED;
const KNOWN: ReadonlySet<string> = new Set(ACQUIRE_OPTIONS);
/**
 * Policy fields, which belong inside `policy`: named in the error, since they are the likely slip.
 * A record, so the compiler refuses it until a new field of AcquirePolicyInit is named here too.
 */
const POLICY_FIELD_NAMES: { readonly [field in keyof Required<AcquirePolicyInit>]: true } = {
  totalBudgetMillis: true,
  baseBackoffMillis: true,
  maxBackoffMillis: true,
  maxAttempts: true,
  waitMillis: true,
};
const POLICY_FIELDS: ReadonlySet<string> = new Set(Object.keys(POLICY_FIELD_NAMES));

/** An option the SDK does not know, set to something, is a ValidationError before anything is sent. */
export function assertKnownAcquireOptions(options: object): void {
  for (const name in options) {
    if (KNOWN.has(name) || (options as Record<string, unknown>)[name] === undefined) continue;
    const where = POLICY_FIELDS.has(name) ? ` (a policy field: pass it as policy: { ${name} })` : '';
    throw new ValidationError(`unknown acquire option ${JSON.stringify(name)}${where}; the options are ${ACQUIRE_OPTIONS.join(', ')}`);
  }
}
