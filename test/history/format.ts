/**
 * The history format (docs/history.md): one record per client operation, with
 * its invoke and complete instants on one monotonic clock of the test process,
 * its arguments and its outcome. Written as JSON Lines: a header line, then one
 * operation per line in invoke order. This module is the format only — no
 * Holdfast imports — so the checker and outside tools share nothing else.
 *
 * v3 kinds: an acquire's `mode` and `limit` travel in `args` (the recorder
 * writes the defaults, `exclusive` and 1, when the request left them out), and
 * grants echo them in `result`. The mutex rules judge grants of mode
 * `exclusive` and limit 1; the holders rule (checker/holders.ts) judges every
 * kind against the others on its key.
 */

export const HISTORY_FORMAT = 'holdfast-history/1';

/**
 * `ok`: the operation took effect as answered. `fail`: it certainly did not
 * (a definite refusal: 4xx, or a connection refused before anything was sent).
 * `unknown`: it may or may not have taken effect, at any instant after its
 * invoke (a timeout, a reset connection, a 5xx, or no answer before the run ended).
 */
export type Outcome = 'ok' | 'fail' | 'unknown';

/** What was done. L1–L7, A3, A6 of C3, the fenced resource's write, and the nemesis' own steps. */
export type OpFunction =
  | 'open' // L1
  | 'heartbeat' // L2
  | 'close' // L3
  | 'acquire' // L4
  | 'renew' // L5
  | 'release' // L6
  | 'read' // L7
  | 'revoke' // A3
  | 'kill' // A6
  | 'write' // the fenced resource
  | 'fault' // the nemesis: a fault starts (invoke) and ends (complete)
  | 'watch'; // L8 (v3; not recorded yet)

export interface HistoryOp {
  /** Position in invoke order, from 0. */
  index: number;
  /** Who did it: one SDK client (`c3`), the operator (`admin`), the workload's resource (`resource`), `nemesis`. */
  process: string;
  f: OpFunction;
  /** The session the operation acts as or on (L2–L6 their own, A6 its target; L1's once answered). */
  sessionId?: string;
  key?: string;
  /** Request fields: ttlMillis, waitMillis, fencingToken, mode, limit, expectedFencingToken, fault name… */
  args: Record<string, string | number | boolean>;
  /** Monotonic milliseconds since the history's origin (test process clock). */
  invokeAt: number;
  /** Monotonic milliseconds; for `unknown` the instant the client gave up (an upper bound on nothing). */
  completeAt: number;
  outcome: Outcome;
  /** Answer fields that matter to the checker: fencingToken, ttlMillis, held, sessionId, accepted, outcome… */
  result?: Record<string, string | number | boolean>;
  /** HTTP status and C3 error code when refused or unanswered; `error` text for transport failures. */
  error?: { status?: number; code?: string; message?: string };
  /** Which server instance answered (label of the endpoint, e.g. `A`). */
  endpoint?: string;
}

export interface HistoryHeader {
  format: typeof HISTORY_FORMAT;
  /** What the clock is: kept in the file so a reader need not guess units. */
  clock: 'ms since origin, performance.now() of the test process';
  store?: string;
  seed?: number;
  instances?: number;
  /** A planted bug, when the run tests the checker. */
  plantedBug?: string;
  /** Free-form figures (ops asked, faults scheduled…). */
  meta?: Record<string, string | number | boolean>;
}

export interface History {
  header: HistoryHeader;
  ops: HistoryOp[];
}

export function toJsonLines(history: History): string {
  return [JSON.stringify(history.header), ...history.ops.map((op) => JSON.stringify(op))].join('\n') + '\n';
}

export function fromJsonLines(text: string): History {
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  const [first, ...rest] = lines;
  if (first === undefined) throw new Error('empty history');
  const header = JSON.parse(first) as HistoryHeader;
  if (header.format !== HISTORY_FORMAT) throw new Error(`not a ${HISTORY_FORMAT} history: ${first.slice(0, 80)}`);
  return { header, ops: rest.map((line) => JSON.parse(line) as HistoryOp) };
}

export type GrantMode = 'exclusive' | 'shared';

/** How an acquire asked to hold: the answer's echo when there is one, else the request, else the defaults. */
export function grantKind(op: HistoryOp): { mode: GrantMode; limit: number } {
  const mode = op.result?.mode ?? op.args.mode ?? 'exclusive';
  const limit = Number(op.result?.limit ?? op.args.limit ?? 1);
  return { mode: mode === 'shared' ? 'shared' : 'exclusive', limit: Number.isFinite(limit) && limit >= 1 ? limit : 1 };
}

/** A mutex is `exclusive` with limit 1: the kind the pairwise rules (mutex, reads, fence refusals) judge. */
export function isMutex(op: HistoryOp): boolean {
  const { mode, limit } = grantKind(op);
  return mode === 'exclusive' && limit === 1;
}
