/**
 * Console records (issue 25, "console replicas"): small expiring records the operations console
 * keeps in the lock server's store — pending sign-in codes, live console sessions, wrong-secret
 * counts per code — so a console restart keeps everyone signed in and several console replicas
 * behind one address share one view. The store knows nothing of what they mean (lock/http's
 * console-routes.ts does); it keeps `value` opaque.
 *
 * Rules every implementation keeps (test/store/conformance/console-records-suite.ts):
 * - A record is live until `ttlMillis` after its put, on the store's clock (PostgreSQL's and
 *   PGlite's clock; etcd: a lease, so at least the TTL and under a second more). A record that is
 *   not live is absent to every call, even before anything deletes it.
 * - `take` is read-and-delete in one step: of any number of concurrent takes of one record, on
 *   any number of instances, exactly one answers it. That is what makes a sign-in code one-time
 *   fleet-wide.
 * - `put` replaces a live record of the same kind and id (a new TTL from now).
 */

/** `kind` names a family of records; `id` one record of it. Both are short ASCII (CONSOLE_RECORD_RULES). */
export interface ConsoleRecord {
  kind: string;
  id: string;
  value: string;
  /** When it stops being live: the store's epoch milliseconds (etcd: advisory, the answering server's clock). */
  expiresAt: number;
}

export interface ConsoleRecordStore {
  put(record: { kind: string; id: string; value: string; ttlMillis: number }): Promise<ConsoleRecord>;
  /** The live record, or null. */
  get(kind: string, id: string): Promise<ConsoleRecord | null>;
  /** The live record, deleted in the same step; null when absent, expired, or taken by someone else first. */
  take(kind: string, id: string): Promise<ConsoleRecord | null>;
  /** True when a live record was deleted. */
  delete(kind: string, id: string): Promise<boolean>;
  /** Live records of `kind` whose id starts with `idPrefix`: soonest expiry first (ties by id), at most `limit`. */
  list(kind: string, idPrefix: string, limit: number): Promise<ConsoleRecord[]>;
}

/** The shapes every store accepts (the routes build ids from these; the stores check them as a last line). */
export const CONSOLE_RECORD_RULES = {
  kind: /^[a-z][a-z0-9-]{0,31}$/,
  /** Printable ASCII without spaces: ids are digests, random ids and `/`-joined pairs of them. */
  id: /^[!-~]{1,200}$/,
  maxValueBytes: 16_384,
  maxTtlMillis: 24 * 60 * 60_000,
  maxList: 10_000,
} as const;

/** Throws on a record no store accepts: a bug in the caller, never user input (the routes validate first). */
export function checkConsoleRecord(kind: string, id: string, value?: string, ttlMillis?: number): void {
  checkConsoleKind(kind, id, true);
  if (value !== undefined && Buffer.byteLength(value) > CONSOLE_RECORD_RULES.maxValueBytes) throw new Error('console record value too large');
  if (ttlMillis !== undefined && (!Number.isInteger(ttlMillis) || ttlMillis < 1 || ttlMillis > CONSOLE_RECORD_RULES.maxTtlMillis)) {
    throw new Error(`console record ttlMillis ${ttlMillis} is out of range`);
  }
}

/** `list`'s arguments: the kind, and an id prefix that may be empty. */
export function checkConsoleList(kind: string, idPrefix: string, limit: number): void {
  checkConsoleKind(kind, idPrefix, false);
  if (!Number.isInteger(limit) || limit < 1 || limit > CONSOLE_RECORD_RULES.maxList) throw new Error(`console record list limit ${limit} is out of range`);
}

function checkConsoleKind(kind: string, id: string, idRequired: boolean): void {
  if (!CONSOLE_RECORD_RULES.kind.test(kind)) throw new Error(`console record kind ${JSON.stringify(kind)} is not allowed`);
  if ((idRequired || id !== '') && !CONSOLE_RECORD_RULES.id.test(id)) throw new Error(`console record id ${JSON.stringify(id)} is not allowed`);
}
