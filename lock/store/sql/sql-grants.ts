/**
 * Grants in SQL: acquire and release (each batched into shared statements), renew, the reads of
 * held locks, forced revocation and the sweep of lapsed grants. Every writer takes its row locks
 * in the store's order (sql-store.ts); an acquire holds a share lock on its own session row
 * (acquire-batch.ts), so no grant outlives the end of its session.
 */
import type { BackendName, FencingToken, Page } from '../../../contract/records.js';
import { NotLeaderError } from '../../errors.js';
import type {
  AuditDraft,
  EndedLock,
  ForceRevokeResult,
  HandedGrant,
  HeldLock,
  ListQuery,
  ReleaseResult,
  RenewRequest,
  RenewResult,
  SessionCredential,
  SessionRefusal,
  TryAcquireResult,
} from '../spi.js';
import { decodeKeyCursor, encodeCursor } from '../cursor.js';
import { deleteHold, describeKeys, expireHolds, liveGrantsOf, liveHold, liveHoldsForUpdate, releaseHolds, renewHold } from './sql-holds.js';
import { acquireInRounds, type AcquireRequest, type AcquireRow } from './acquire-batch.js';
import type { Queryable, Row, SqlDatabase } from './queryable.js';
import type { SqlAudit } from './sql-audit.js';
import { guardSql } from './sql-errors.js';
import { DB_NOW, LIVE_LOCK, LOCK_COLUMNS, QUALIFIED_LOCK_COLUMNS, toEndedLock, toGrant, toLock, withoutEnd } from './sql-rows.js';
import { StatementBatcher } from '../statement-batcher.js';

interface ReleaseRequest {
  key: string;
  session: SessionCredential;
  fencingToken: FencingToken;
}

export class SqlGrants {
  private readonly acquires = new StatementBatcher((batch: AcquireRequest[]) => this.acquireBatch(batch));
  private readonly releases = new StatementBatcher((batch: ReleaseRequest[]) => this.releaseBatch(batch));

  constructor(
    private readonly db: SqlDatabase,
    private readonly backend: BackendName,
    private readonly audit: SqlAudit,
  ) {}

  /** Concurrent try-acquires share one call (group commit, acquire-batch.ts); each gets its own answer. */
  async tryAcquire(req: AcquireRequest): Promise<TryAcquireResult> {
    const row = await this.acquires.submit(req);
    if (row instanceof Error) throw row;
    switch (row.kind) {
      case 'session_not_found':
      case 'unauthenticated':
        return { kind: row.kind };
      case 'held':
        return { kind: 'held', holder: toLock(row), ...(row.wait_recorded === true ? { waitRecorded: true } : {}) };
      case 'limit_mismatch':
        return { kind: 'limit_mismatch', limit: Number(row.holder_limit), holder: toLock(row) };
      default: {
        const lock = toLock(row);
        return { kind: 'granted', grant: toGrant(lock), owner: lock.owner, existing: row.kind === 'existing' };
      }
    }
  }

  async renew(req: RenewRequest): Promise<RenewResult> {
    const rows = await this.guard(() =>
      this.db.query(
        // Without a TTL the grant keeps its own: a renew never shortens a lock by accident. With a
        // value it is a proclaim: the value changes in the renew's own write, the token does not.
        `UPDATE holdfast_locks l
         SET ttl_millis = COALESCE($5::integer, l.ttl_millis), expires_at = n.now + COALESCE($5::integer, l.ttl_millis),
             value = COALESCE($7::text, l.value)
         FROM holdfast_sessions s, (SELECT holdfast_now_ms() AS now) n
         WHERE l.key = $1 AND l.fencing_token = $2::bigint AND l.session_id = $3 AND l.expires_at > n.now
           AND s.session_id = $3 AND s.token_hash = $4 AND s.expires_at > n.now
           AND ($6::bigint IS NULL OR n.now - l.granted_at < $6::bigint)
         RETURNING ${QUALIFIED_LOCK_COLUMNS}`,
        [req.key, req.fencingToken, req.session.sessionId, req.session.tokenHash, req.ttlMillis ?? null, req.maxHoldMillis ?? null, req.value ?? null],
      ),
    );
    if (rows[0]) return { kind: 'renewed', lock: toLock(rows[0]) };
    // Not a lock row of the caller's: a hold of a multi-holder key, perhaps (only a miss pays for the look).
    const hold = await this.guard(() => renewHold(this.db, req));
    if (hold) return { kind: 'renewed', lock: hold };
    const refused = await this.refusal(this.db, req.session);
    if (refused) return refused;
    if (req.maxHoldMillis === undefined) return { kind: 'lost' };
    const heldHold = await this.guard(() => liveHold(this.db, req.key, req.fencingToken, req.session.sessionId));
    if (heldHold) return { kind: 'hold_limit', lock: heldHold };
    // Not renewed: still this session's live grant means it was refused for its age alone.
    const held = await this.guard(() =>
      this.db.query(
        `SELECT ${LOCK_COLUMNS} FROM holdfast_locks l
         WHERE l.key = $1 AND l.fencing_token = $2::bigint AND l.session_id = $3 AND ${LIVE_LOCK('l')}`,
        [req.key, req.fencingToken, req.session.sessionId],
      ),
    );
    return held[0] ? { kind: 'hold_limit', lock: toLock(held[0]) } : { kind: 'lost' };
  }

  /**
   * A batch whose call fails for a reason other than an unreachable store is retried one
   * request at a time, so a request that PostgreSQL refuses fails alone.
   */
  private async acquireBatch(batch: AcquireRequest[]): Promise<(AcquireRow | Error)[]> {
    try {
      return await this.guard(() => acquireInRounds(this.db, batch));
    } catch (error) {
      if (batch.length === 1 || error instanceof NotLeaderError) throw error;
      return Promise.all(
        batch.map((request) =>
          this.guard(() => acquireInRounds(this.db, [request])).then(
            (rows) => rows[0]!,
            (alone: unknown) => (alone instanceof Error ? alone : new Error(String(alone))),
          ),
        ),
      );
    }
  }

  /**
   * Compare-and-delete on (key, token) of the caller's live grant; concurrent releases share one
   * call. A key with a recorded wait that can take it is handed to the oldest such wait in the
   * same call instead (holdfast_release_batch, migration 6): the release answers that grant too.
   */
  release(req: ReleaseRequest): Promise<ReleaseResult> {
    return this.releases.submit(req);
  }

  private async releaseBatch(batch: ReleaseRequest[]): Promise<ReleaseResult[]> {
    const rows = await this.guard(() =>
      this.db.query(RELEASE_SQL, [
        batch.map((b) => b.key),
        batch.map((b) => b.fencingToken),
        batch.map((b) => b.session.sessionId),
        batch.map((b) => b.session.tokenHash),
      ]),
    );
    const byIndex = new Map(rows.map((row) => [Number(row.r_index), row]));
    // What no lock row answered may be a hold of a multi-holder key: only those requests pay for a second look.
    const missed = batch.filter((_, index) => !byIndex.has(index + 1));
    const holdsEnded = missed.length === 0 ? new Map<number, EndedLock>() : await this.guard(() => this.db.transaction((tx) => releaseHolds(tx, missed)));
    const results: ReleaseResult[] = [];
    for (const [index, b] of batch.entries()) {
      const row = byIndex.get(index + 1);
      const hold = row ? undefined : holdsEnded.get(missed.indexOf(b));
      if (row) {
        results.push({ kind: 'released', lock: toEndedLock(unprefixed(row, 'r_')), ...(row.h_wait_id ? { handedTo: toHandedGrant(row) } : {}) });
      } else if (hold) {
        results.push({ kind: 'released', lock: hold });
      } else {
        // Only a failure pays for the diagnosis: whose session, and was the token right.
        results.push((await this.guard(() => this.refusal(this.db, b.session))) ?? { kind: 'lost' });
      }
    }
    return results;
  }

  /** A key's lowest-token live grant, with every live grant as `holders` when it admits several (sql-holds.ts). */
  async readLock(key: string): Promise<HeldLock | null> {
    return this.guard(async () => {
      const rows = await this.db.query(
        `SELECT ${QUALIFIED_LOCK_COLUMNS}, l.mode IS NOT NULL AS anchor, ${LIVE_LOCK('l')} AS live FROM holdfast_locks l WHERE l.key = $1`,
        [key],
      );
      const row = rows[0];
      if (!row) return null;
      if (row.anchor !== true) return row.live === true ? toLock(row) : null;
      return describeKeys([key], await liveGrantsOf(this.db, [key]), new Set([key]))[0] ?? null;
    });
  }

  async listLocks(query: ListQuery & { prefix?: string }): Promise<Page<HeldLock>> {
    const after = decodeKeyCursor(query.cursor);
    return this.guard(async () => {
      const rows = await this.db.query(
        `SELECT ${QUALIFIED_LOCK_COLUMNS}, l.mode IS NOT NULL AS anchor FROM holdfast_locks l
         WHERE (${LIVE_LOCK('l')} OR (l.mode IS NOT NULL AND EXISTS (SELECT 1 FROM holdfast_holds h WHERE h.key = l.key AND ${LIVE_LOCK('h')})))
           AND ($1::text IS NULL OR starts_with(l.key, $1))
           AND ($2::text IS NULL OR l.key > $2)
         ORDER BY l.key LIMIT $3`,
        [query.prefix || null, after, query.limit + 1],
      );
      const page = rows.slice(0, query.limit);
      const anchors = new Set(page.filter((r) => r.anchor === true).map((r) => String(r.key)));
      const holds = await liveGrantsOf(this.db, [...anchors]);
      const keys = page.map((r) => String(r.key));
      const mutexes = page.filter((r) => r.anchor !== true).map(toLock);
      const items = describeKeys(keys, [...mutexes, ...holds], anchors);
      return { items, nextCursor: rows.length > query.limit ? encodeCursor(keys.at(-1)!) : null };
    });
  }

  async forceRevoke(req: { key: string; expectedFencingToken?: FencingToken; audit: AuditDraft }): Promise<ForceRevokeResult> {
    return this.guard(() =>
      this.db.transaction(async (tx) => {
        const rows = await tx.query(
          `SELECT ${LOCK_COLUMNS}, (${LIVE_LOCK('l')}) AS live, l.mode IS NOT NULL AS anchor, ${DB_NOW} AS ended_at FROM holdfast_locks l WHERE l.key = $1 FOR UPDATE`,
          [req.key],
        );
        // A multi-holder key: the hold the expected token names, else the lowest-token one (one permit at a time).
        const holds = rows[0]?.anchor === true ? await liveHoldsForUpdate(tx, req.key) : [];
        const current =
          rows[0]?.anchor === true
            ? (holds.find((h) => h.fencingToken === req.expectedFencingToken) ?? holds[0])
            : rows[0] && rows[0].live
              ? toEndedLock(rows[0])
              : undefined;
        let outcome: ForceRevokeResult['outcome'];
        if (!current) outcome = 'NOT_HELD';
        else if (req.expectedFencingToken !== undefined && req.expectedFencingToken !== current.fencingToken)
          outcome = 'TOKEN_MISMATCH';
        else outcome = 'REVOKED';
        if (outcome === 'REVOKED' && rows[0]?.anchor === true) {
          await deleteHold(tx, req.key, current!.sessionId);
        } else if (outcome === 'REVOKED') {
          await tx.query('DELETE FROM holdfast_locks WHERE key = $1', [req.key]);
        }
        const audit = await this.audit.append(tx, {
          ...req.audit,
          action: 'lock.revoke',
          target: req.key,
          fencingToken: outcome === 'REVOKED' ? current!.fencingToken : req.expectedFencingToken,
          outcome,
        });
        const holder = current ? withoutEnd(current) : undefined;
        return {
          outcome,
          ...(outcome === 'REVOKED' ? { revoked: current } : {}),
          ...(outcome === 'TOKEN_MISMATCH' ? { holder } : {}),
          audit,
        };
      }),
    );
  }

  async expireLocks(limit: number): Promise<EndedLock[]> {
    const rows = await this.guard(() =>
      this.db.query(
        // Only lapsed TTLs (an index range scan, oldest first, stopping at the limit; see
        // expireSessions for why not key order), deleted by primary key (= ANY(ARRAY(...)): an
        // IN (subquery) was planned as a hash join over every lock row): locks of ended sessions
        // go with their session in the same transaction, so there are no orphans to hunt for.
        // Also the records (up to `limit` a sweep) of handed waits whose grant is gone (expired, revoked, taken over):
        // their wait answered without an endWait (spi.ts), and nothing can give the grant back now.
        // Skipping locked records, as the sweep skips locked grants: it never waits on a session's
        // or instance's end (which lock records in their own order), nor on a release or endWait.
        `WITH n AS (SELECT holdfast_now_ms() AS now),
         handed_gone AS (DELETE FROM holdfast_waiters WHERE wait_id = ANY(ARRAY(
           SELECT w.wait_id FROM holdfast_waiters w WHERE w.granted_token IS NOT NULL
             AND NOT EXISTS (SELECT 1 FROM holdfast_locks l WHERE l.key = w.key AND l.fencing_token = w.granted_token)
           LIMIT $1 FOR UPDATE OF w SKIP LOCKED)))
         DELETE FROM holdfast_locks WHERE key = ANY(ARRAY(
           SELECT l.key FROM holdfast_locks l WHERE l.expires_at <= ${DB_NOW}
           ORDER BY l.expires_at LIMIT $1 FOR UPDATE SKIP LOCKED))
         RETURNING ${LOCK_COLUMNS}, (SELECT now FROM n) AS ended_at`,
        [limit],
      ),
    );
    // Lapsed holds of multi-holder keys (migration 13) with what is left of the limit.
    const holds = rows.length < limit ? await this.guard(() => expireHolds(this.db, limit - rows.length)) : [];
    return [...rows.map(toEndedLock), ...holds];
  }

  /**
   * Why a session-scoped change touched nothing: the session is not live, or the token is
   * wrong. Null when the session is live and the token right (the lock itself is the problem).
   */
  private async refusal(db: Queryable, credential: SessionCredential): Promise<SessionRefusal | null> {
    const rows = await db.query(
      `SELECT token_hash = $2 AS token_ok FROM holdfast_sessions WHERE session_id = $1 AND expires_at > ${DB_NOW}`,
      [credential.sessionId, credential.tokenHash],
    );
    if (!rows[0]) return { kind: 'session_not_found' };
    return rows[0].token_ok === true ? null : { kind: 'unauthenticated' };
  }

  /** Maps "cannot take writes" failures to NOT_LEADER (sql-errors.ts). */
  private guard<T>(operation: () => Promise<T>): Promise<T> {
    return guardSql(this.backend, operation);
  }
}

/**
 * The release batch (migration 6), which also deletes the record of the handed wait whose grant
 * each release ends: that wait answered with the grant and sent no endWait (spi.ts). A record
 * someone else has locked (its session's or instance's end, an endWait) is passed over, as the
 * release passes over a locked heir: a release never waits on a wait's row lock (it holds lock
 * rows and heirs' records, and an instance's end locks that instance's records in any order).
 * The sweep takes what is left once this grant is gone. A handed grant carries its wait's value,
 * set in the same statement (holdfast_settle_handed_value, migration 12), and tells watches of its
 * key (a handoff deletes no row, so the release trigger says nothing of it).
 */
const RELEASE_SQL = `WITH r AS (SELECT * FROM holdfast_release_batch($1::text[], $2::bigint[], $3::text[], $4::text[])),
  handed_done AS (DELETE FROM holdfast_waiters WHERE wait_id = ANY(ARRAY(
    SELECT w.wait_id FROM holdfast_waiters w JOIN r ON w.key = r.r_key AND w.granted_token = r.r_fencing_token::bigint
    FOR UPDATE OF w SKIP LOCKED)))
  SELECT r.*, CASE WHEN r.h_wait_id IS NOT NULL THEN holdfast_settle_handed_value(r.r_key, r.h_fencing_token, r.h_wait_id) END AS h_value,
    CASE WHEN r.h_wait_id IS NOT NULL AND EXISTS (SELECT 1 FROM holdfast_watches hw WHERE hw.key = r.r_key)
      THEN pg_notify('holdfast_holders', r.r_key)::text END AS h_watched
  FROM r`;

/** A row's columns that start with `prefix`, without it (the release function answers two locks per row). */
function unprefixed(row: Row, prefix: string): Row {
  const out: Row = {};
  for (const [column, value] of Object.entries(row)) if (column.startsWith(prefix)) out[column.slice(prefix.length)] = value;
  return out;
}

function toHandedGrant(row: Row): HandedGrant {
  return { ...toLock(unprefixed(row, 'h_')), key: String(row.r_key), waitId: String(row.h_wait_id) };
}
