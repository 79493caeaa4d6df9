/**
 * Group commit for acquires: the try-acquires of one event-loop turn go to the database as one
 * call of holdfast_acquire_holders (migration 13), which takes the row locks in key order and draws
 * the tokens afterwards in request order. Each request still gets its own answer (granted, held,
 * existing, limit_mismatch, or its own session refusal); a key asked for twice waits for the next
 * round, so within one call every key is decided once. A lone mutex attempt with no wait to record
 * (the uncontended hot path) takes the one-request function, holdfast_acquire_one, instead.
 *
 * The function writes each grant's value with its token, and records the wait of a request that
 * finds the key held (migration 11's rule, with the wait's mode and value), so one statement with
 * no function call per answered row serves mutexes and multi-holder keys alike.
 */
import type { LockMode } from '../../../contract/records.js';
import { isMutex } from '../../../contract/wire-rules.js';
import type { SessionCredential, WaitToRecord } from '../spi.js';
import type { Queryable, Row } from './queryable.js';

export interface AcquireRequest {
  key: string;
  session: SessionCredential;
  ttlMillis: number;
  /** Recorded as a wait if the try finds the key held by another live session (AcquireAttempt.recordWait). */
  recordWait?: WaitToRecord;
  /** A new grant's value (AcquireAttempt.value). */
  value?: string;
  /** AcquireAttempt.mode and .limit: absent for a mutex. */
  mode?: LockMode;
  limit?: number;
}

/** One row per request: `kind` is granted | existing | held | limit_mismatch | session_not_found | unauthenticated | retry. */
export type AcquireRow = Row & { kind: string };

/**
 * A wait ends in the same write as its grant: the session's recorded waits on a key it is granted
 * (or already holds) go in the granting statement. Else a release could hand the key to the
 * record of a wait already answered (its end not yet sent), and the session would hold it unawares.
 * A new grant of a key some instance watches (L8, migration 12) tells the watches, delivered on
 * commit: an index probe in this statement, nothing more for a key nobody watches.
 */
const withWaitsEnded = (select: string) => `WITH r AS (${select}),
  ended AS (DELETE FROM holdfast_waiters w USING r WHERE r.kind IN ('granted', 'existing') AND w.key = r.key AND w.session_id = r.session_id)
  SELECT r.*, CASE WHEN r.kind = 'granted' AND EXISTS (SELECT 1 FROM holdfast_watches hw WHERE hw.key = r.key)
    THEN pg_notify('holdfast_holders', r.key)::text END AS watched
  FROM r`;

const ANSWER_COLUMNS = `r_kind AS kind, r_key AS key, r_session_id AS session_id, r_owner AS owner, r_fencing_token AS fencing_token,
  r_ttl_millis AS ttl_millis, r_granted_at AS granted_at, r_expires_at AS expires_at, r_value AS value, r_mode AS mode, r_limit AS holder_limit`;

const ACQUIRE_SQL = withWaitsEnded(`SELECT r_index AS index, ${ANSWER_COLUMNS}, r_wait_recorded AS wait_recorded
  FROM holdfast_acquire_holders($1::text[], $2::text[], $3::text[], $4::integer[], $5::text[], $6::text[], $7::integer[],
                                $8::text[], $9::text[], $10::integer[], $11::bigint[])`);

/** A lone mutex attempt with no wait to record: the one-request function, without the batch's array work. */
const SINGLE_SQL = withWaitsEnded(`SELECT ${ANSWER_COLUMNS} FROM holdfast_acquire_one($1::text, $2::text, $3::text, $4::integer, $5::text)`);


/** Runs `batch` in as few calls as keys allow (one, unless a key repeats); rows in request order. */
export async function acquireInRounds(db: Queryable, batch: readonly AcquireRequest[]): Promise<AcquireRow[]> {
  const results: AcquireRow[] = new Array(batch.length);
  // A key's exclusive attempts go in its first rounds, its shared ones after (writer preference in
  // the batch too): a writer decided behind a queue of readers would see them admitted first, and
  // a writer's wait recorded in round one keeps the readers of later rounds out.
  let pending = batch.map((request, index) => ({ request, index })).sort((a, b) => sharedLast(a.request) - sharedLast(b.request));
  while (pending.length > 0) {
    const seen = new Set<string>();
    const round: typeof pending = [];
    const later: typeof pending = [];
    for (const item of pending) {
      if (seen.has(item.request.key)) later.push(item);
      else {
        seen.add(item.request.key);
        round.push(item);
      }
    }
    const lone = round.length === 1 && !round[0]!.request.recordWait && isMutex(round[0]!.request);
    const rows = lone ? [await acquireSingle(db, round[0]!.request)] : await acquireOnce(db, round.map((item) => item.request));
    round.forEach((item, i) => (results[item.index] = rows[i]!));
    pending = later;
  }
  // A key that changed hands 20 times inside the call: that request alone tries again on its own.
  for (let i = 0; i < batch.length; i++) {
    for (let again = 0; results[i]!.kind === 'retry' && again < 5; again++) results[i] = (await acquireOnce(db, [batch[i]!]))[0]!;
    if (results[i]!.kind === 'retry') throw new Error(`tryAcquire on ${JSON.stringify(batch[i]!.key)}: the key kept changing hands`);
  }
  return results;
}

const sharedLast = (request: AcquireRequest) => (request.mode === 'shared' ? 1 : 0);

/** One call for a batch of distinct keys. */
async function acquireOnce(db: Queryable, batch: readonly AcquireRequest[]): Promise<AcquireRow[]> {
  const rows = await db.query<AcquireRow>(ACQUIRE_SQL, [
    batch.map((r) => r.key),
    batch.map((r) => r.session.sessionId),
    batch.map((r) => r.session.tokenHash),
    batch.map((r) => r.ttlMillis),
    batch.map((r) => r.value ?? null),
    batch.map((r) => r.mode ?? null),
    batch.map((r) => r.limit ?? null),
    batch.map((r) => r.recordWait?.waitId ?? null),
    batch.map((r) => r.recordWait?.instanceId ?? null),
    batch.map((r) => r.recordWait?.ttlMillis ?? null),
    batch.map((r) => (r.recordWait?.deadlineMillis === undefined ? null : Math.max(0, Math.floor(r.recordWait.deadlineMillis)))),
  ]);
  const byIndex: AcquireRow[] = new Array(batch.length);
  for (const row of rows) byIndex[Number(row.index) - 1] = row;
  for (let i = 0; i < batch.length; i++) {
    if (!byIndex[i]) throw new Error(`holdfast_acquire_holders answered nothing for ${JSON.stringify(batch[i]!.key)}`);
  }
  return byIndex;
}

/** The one-request function (migration 13's holdfast_acquire_one). */
async function acquireSingle(db: Queryable, request: AcquireRequest): Promise<AcquireRow> {
  const rows = await db.query<AcquireRow>(SINGLE_SQL, [request.key, request.session.sessionId, request.session.tokenHash, request.ttlMillis, request.value ?? null]);
  const row = rows[0];
  if (!row) throw new Error(`tryAcquire on ${JSON.stringify(request.key)} answered nothing`);
  return row;
}
