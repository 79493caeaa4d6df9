/**
 * Group commit for acquires: the try-acquires of one event-loop turn go to
 * PostgreSQL as one call of holdfast_try_acquire_batch (schema v4), which takes
 * the row locks in key order and draws the tokens afterwards in request order.
 * Each request still gets its own answer (granted, held, existing, or its own
 * session refusal); a key asked for twice waits for the next round, so within
 * one call every key is decided once.
 */
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
}

/** One row per request: `kind` is granted | existing | held | session_not_found | unauthenticated | retry. */
export type AcquireRow = Row & { kind: string };

/**
 * A wait ends in the same write as its grant: the session's recorded waits on a key it is granted
 * (or already holds) go in the granting statement. Else a release could hand the key to the
 * record of a wait already answered (its end not yet sent), and the session would hold it unawares.
 * Each answered row also carries its grant's value (`value`, migration 12).
 */
const withWaitsEnded = (select: string, value: string) => `WITH r AS (${select}),
  ended AS (DELETE FROM holdfast_waiters w USING r WHERE r.kind IN ('granted', 'existing') AND w.key = r.key AND w.session_id = r.session_id)
  SELECT r.*, ${value} AS value, ${NOTIFY_WATCHED_GRANT} AS watched FROM r`;

/**
 * A new grant of a key some instance watches (L8, migration 12) tells the watches, delivered on
 * commit: an index probe in this statement, nothing more for a key nobody watches.
 */
const NOTIFY_WATCHED_GRANT = `CASE WHEN r.kind = 'granted' AND EXISTS (SELECT 1 FROM holdfast_watches hw WHERE hw.key = r.key)
    THEN pg_notify('holdfast_holders', r.key)::text END`;

/**
 * Without a value to store (the hot path): a new grant has none (a new token clears the column), an
 * existing one answers its own. The row is unchanged by this statement, so its snapshot reads it.
 */
const VALUE_AS_IT_IS = `CASE WHEN r.kind = 'existing' THEN (SELECT hl.value FROM holdfast_locks hl WHERE hl.key = r.key AND hl.fencing_token = r.fencing_token::bigint) END`;
/** With values: set per answered row in the same statement (holdfast_settle_acquire_value, migration 12). */
const settleValue = (value: string, waitId = 'NULL::text', recorded = 'false') =>
  `holdfast_settle_acquire_value(r.kind, r.key, r.fencing_token, ${value}, ${waitId}, ${recorded})`;

const BATCH_SELECT = `SELECT r_index AS index, r_kind AS kind, r_key AS key, r_session_id AS session_id, r_owner AS owner,
    r_fencing_token AS fencing_token, r_ttl_millis AS ttl_millis, r_granted_at AS granted_at, r_expires_at AS expires_at
  FROM holdfast_try_acquire_batch($1::text[], $2::text[], $3::text[], $4::integer[])`;
const BATCH_SQL = withWaitsEnded(BATCH_SELECT, VALUE_AS_IT_IS);
const BATCH_WITH_VALUES_SQL = withWaitsEnded(BATCH_SELECT, settleValue('($5::text[])[r.index]'));

/** The same with wait records (migration 11): `wait_recorded` on a held row says the wait was recorded. */
const WAITING_SELECT = `SELECT r_index AS index, r_kind AS kind, r_key AS key, r_session_id AS session_id, r_owner AS owner,
    r_fencing_token AS fencing_token, r_ttl_millis AS ttl_millis, r_granted_at AS granted_at, r_expires_at AS expires_at,
    r_wait_recorded AS wait_recorded
  FROM holdfast_acquire_or_wait_batch($1::text[], $2::text[], $3::text[], $4::integer[], $5::text[], $6::text[], $7::integer[], $8::bigint[])`;
/** The contended hot path: no value to store, so no function call per answered row. */
const WAITING_BATCH_SQL = withWaitsEnded(WAITING_SELECT, VALUE_AS_IT_IS);
const WAITING_BATCH_WITH_VALUES_SQL = withWaitsEnded(WAITING_SELECT, settleValue('($9::text[])[r.index]', '($5::text[])[r.index]', 'r.wait_recorded'));

const SINGLE_SELECT = `SELECT r_kind AS kind, r_key AS key, r_session_id AS session_id, r_owner AS owner, r_fencing_token AS fencing_token,
    r_ttl_millis AS ttl_millis, r_granted_at AS granted_at, r_expires_at AS expires_at
  FROM holdfast_try_acquire($1::text, $2::text, $3::text, $4::integer)`;
const SINGLE_SQL = withWaitsEnded(SINGLE_SELECT, VALUE_AS_IT_IS);
const SINGLE_WITH_VALUE_SQL = withWaitsEnded(SINGLE_SELECT, settleValue('$5::text'));

/** Runs `batch` in as few calls as keys allow (one, unless a key repeats); rows in request order. */
export async function acquireInRounds(db: Queryable, batch: readonly AcquireRequest[]): Promise<AcquireRow[]> {
  const results: AcquireRow[] = new Array(batch.length);
  let pending = batch.map((request, index) => ({ request, index }));
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
    // A lone request takes the one-request function: the same rules without the batch's array work.
    const rows =
      round.length === 1 && !round[0]!.request.recordWait
        ? [await acquireSingle(db, round[0]!.request)]
        : await acquireOnce(db, round.map((item) => item.request));
    round.forEach((item, i) => (results[item.index] = rows[i]!));
    pending = later;
  }
  // A key that changed hands 20 times inside the call: that request alone tries again on its own.
  for (let i = 0; i < batch.length; i++) {
    if (results[i]!.kind === 'retry') results[i] = await acquireSingle(db, batch[i]!);
  }
  return results;
}

/** One call for a batch of distinct keys. */
async function acquireOnce(db: Queryable, batch: readonly AcquireRequest[]): Promise<AcquireRow[]> {
  const params = [batch.map((r) => r.key), batch.map((r) => r.session.sessionId), batch.map((r) => r.session.tokenHash), batch.map((r) => r.ttlMillis)];
  const values = batch.map((r) => r.value ?? null);
  const withValues = values.some((v) => v !== null);
  const waits = () => [
    batch.map((r) => r.recordWait?.waitId ?? null),
    batch.map((r) => r.recordWait?.instanceId ?? null),
    batch.map((r) => r.recordWait?.ttlMillis ?? null),
    batch.map((r) => (r.recordWait?.deadlineMillis === undefined ? null : Math.max(0, Math.floor(r.recordWait.deadlineMillis)))),
  ];
  const rows = batch.some((r) => r.recordWait)
    ? withValues
      ? await db.query<AcquireRow>(WAITING_BATCH_WITH_VALUES_SQL, [...params, ...waits(), values])
      : await db.query<AcquireRow>(WAITING_BATCH_SQL, [...params, ...waits()])
    : withValues
      ? await db.query<AcquireRow>(BATCH_WITH_VALUES_SQL, [...params, values])
      : await db.query<AcquireRow>(BATCH_SQL, params);
  const byIndex: AcquireRow[] = new Array(batch.length);
  for (const row of rows) byIndex[Number(row.index) - 1] = row;
  for (let i = 0; i < batch.length; i++) {
    if (!byIndex[i]) throw new Error(`holdfast_try_acquire_batch answered nothing for ${JSON.stringify(batch[i]!.key)}`);
  }
  return byIndex;
}

/** The one-request function (schema v2): raises instead of answering `retry`. */
export async function acquireSingle(db: Queryable, request: AcquireRequest): Promise<AcquireRow> {
  const params = [request.key, request.session.sessionId, request.session.tokenHash, request.ttlMillis];
  const rows =
    request.value === undefined
      ? await db.query<AcquireRow>(SINGLE_SQL, params)
      : await db.query<AcquireRow>(SINGLE_WITH_VALUE_SQL, [...params, request.value]);
  const row = rows[0];
  if (!row) throw new Error(`tryAcquire on ${JSON.stringify(request.key)} answered nothing`);
  return row;
}
