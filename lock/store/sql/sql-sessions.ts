/**
 * Sessions in SQL: open and heartbeat (each batched into shared statements), close, kill, the
 * sweep of lapsed sessions and the listing. Ending a session deletes its locks in the same
 * transaction, taking row locks in the store's order (sql-store.ts): session rows, then lock rows.
 */
import type { BackendName, Page, SessionEndCause, SessionInfo } from '../../../contract/records.js';
import { NotLeaderError } from '../../errors.js';
import type {
  AuditDraft,
  OpenSessionRequest,
  CloseSessionResult,
  EndedLock,
  EndedSession,
  HeartbeatResult,
  KillSessionResult,
  ListQuery,
  SessionCredential,
  SessionRecord,
  SessionRefusal,
  AuthenticateResult,
} from '../spi.js';
import { decodeSessionCursor, encodeCursor } from '../cursor.js';
import type { Queryable, Row, SqlDatabase } from './queryable.js';
import type { SqlAudit } from './sql-audit.js';
import { guardSql } from './sql-errors.js';
import { EMPTIED_ANCHORS, HOLD_COLUMNS } from './sql-holds.js';
import { DB_NOW, LOCK_COLUMNS, prefixed, SESSION_COLUMNS, toEndedLock, toSession } from './sql-rows.js';
import { StatementBatcher } from '../statement-batcher.js';

export class SqlSessions {
  // Group commit for the steady load: at most two heartbeat (and two open) statements in flight,
  // so 128 callers make a few large statements rather than a pool full of small ones.
  private readonly heartbeats = new StatementBatcher((batch: SessionCredential[]) => this.heartbeatBatch(batch), 512, 2);
  private readonly opens = new StatementBatcher((batch: OpenSessionRequest[]) => this.openSessionBatch(batch), 512, 2);

  constructor(
    private readonly db: SqlDatabase,
    private readonly backend: BackendName,
    private readonly audit: SqlAudit,
  ) {}

  /** Concurrent opens share one INSERT (a random id never collides; if a batch fails, each is retried alone). */
  openSession(req: OpenSessionRequest): Promise<SessionRecord> {
    return this.opens.submit(req);
  }

  private async openSessionBatch(batch: OpenSessionRequest[]): Promise<SessionRecord[]> {
    const insert = (requests: OpenSessionRequest[]) =>
      this.guard(() =>
        this.db.query(
          `WITH n AS (SELECT holdfast_now_ms() AS now)
           INSERT INTO holdfast_sessions (session_id, owner, ttl_millis, created_at, last_heartbeat_at, expires_at, token_hash, opened_by)
           SELECT r.sid, r.owner, r.ttl, n.now, n.now, n.now + r.ttl, r.hash, r.opened_by
           FROM unnest($1::text[], $2::text[], $3::integer[], $4::text[], $5::text[]) AS r(sid, owner, ttl, hash, opened_by), n
           ORDER BY r.sid
           RETURNING ${SESSION_COLUMNS}`,
          [
            requests.map((r) => r.sessionId),
            requests.map((r) => r.owner),
            requests.map((r) => r.ttlMillis),
            requests.map((r) => r.tokenHash),
            requests.map((r) => r.openedBy ?? null),
          ],
        ),
      );
    if (batch.length === 1) return [toSession((await insert(batch))[0]!)];
    let rows: Row[];
    try {
      rows = await insert(batch);
    } catch (error) {
      if (error instanceof NotLeaderError) throw error;
      // One bad request must not fail its neighbours: each answers alone (and fails alone).
      return Promise.all(batch.map((r) => this.opens.submitAlone(r)));
    }
    const byId = new Map(rows.map((row) => [String(row.session_id), toSession(row)]));
    return batch.map((r) => byId.get(r.sessionId)!);
  }

  /** Concurrent heartbeats share one statement; each caller gets its own answer. */
  heartbeat(credential: SessionCredential): Promise<HeartbeatResult> {
    return this.heartbeats.submit(credential);
  }

  /**
   * One statement for the whole batch: row locks in session order (like every multi-row
   * writer), the token hash checked per row, the database clock read once; the same
   * statement says why each refused row was refused (its snapshot is the statement's).
   */
  private async heartbeatBatch(batch: SessionCredential[]): Promise<HeartbeatResult[]> {
    const rows = await this.guard(() =>
      this.db.query(
        `WITH n AS (SELECT holdfast_now_ms() AS now),
         r AS (SELECT * FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS r(sid, hash, ord)),
         target AS (
           SELECT s.session_id FROM holdfast_sessions s WHERE s.session_id IN (SELECT sid FROM r)
           ORDER BY s.session_id FOR UPDATE OF s),
         beat AS (
           UPDATE holdfast_sessions s SET last_heartbeat_at = n.now, expires_at = n.now + s.ttl_millis
           FROM n WHERE s.session_id IN (SELECT session_id FROM target) AND s.expires_at > n.now
             AND EXISTS (SELECT 1 FROM r WHERE r.sid = s.session_id AND r.hash = s.token_hash)
           RETURNING ${prefixed('s', SESSION_COLUMNS)}, s.token_hash)
         SELECT r.ord, r.hash AS presented, b.*, (x.session_id IS NOT NULL) AS was_live, x.token_hash AS live_hash
         FROM r LEFT JOIN beat b ON b.session_id = r.sid
           LEFT JOIN holdfast_sessions x ON x.session_id = r.sid AND x.expires_at > (SELECT now FROM n)
         ORDER BY r.ord`,
        [batch.map((c) => c.sessionId), batch.map((c) => c.tokenHash)],
      ),
    );
    return rows.map((row): HeartbeatResult => {
      if (row.token_hash !== null && row.token_hash !== undefined && row.token_hash === row.presented) {
        return { kind: 'alive', session: toSession(row) };
      }
      if (row.token_hash !== null && row.token_hash !== undefined) return { kind: 'unauthenticated' };
      if (!row.was_live) return { kind: 'session_not_found' };
      return row.live_hash === row.presented ? { kind: 'session_not_found' } : { kind: 'unauthenticated' };
    });
  }

  async authenticateSession(credential: SessionCredential): Promise<AuthenticateResult> {
    const rows = await this.guard(() =>
      this.db.query(`SELECT ${SESSION_COLUMNS}, token_hash FROM holdfast_sessions WHERE session_id = $1 AND expires_at > ${DB_NOW}`, [
        credential.sessionId,
      ]),
    );
    if (!rows[0]) return { kind: 'session_not_found' };
    return rows[0].token_hash === credential.tokenHash ? { kind: 'authenticated', session: toSession(rows[0]) } : { kind: 'unauthenticated' };
  }

  async getSession(sessionId: string): Promise<SessionRecord | null> {
    const rows = await this.guard(() =>
      this.db.query(`SELECT ${SESSION_COLUMNS} FROM holdfast_sessions WHERE session_id = $1 AND expires_at > ${DB_NOW}`, [sessionId]),
    );
    return rows[0] ? toSession(rows[0]) : null;
  }

  async closeSession(credential: SessionCredential): Promise<CloseSessionResult> {
    return this.guard(() =>
      this.db.transaction(async (tx) => {
        const ended = await this.endLiveSession(tx, credential.sessionId, 'closed', credential.tokenHash);
        if ('kind' in ended) return ended;
        return { kind: 'closed' as const, ended };
      }),
    );
  }

  async killSession(sessionId: string, audit: AuditDraft): Promise<KillSessionResult> {
    return this.guard(() =>
      this.db.transaction(async (tx) => {
        const result = await this.endLiveSession(tx, sessionId, 'killed');
        const ended = 'kind' in result ? null : result;
        const entry = await this.audit.append(tx, {
          ...audit,
          action: 'session.kill',
          target: sessionId,
          outcome: ended ? 'KILLED' : 'NOT_FOUND',
        });
        return { ended, audit: entry };
      }),
    );
  }

  async expireSessions(limit: number): Promise<EndedSession[]> {
    return this.guard(() =>
      this.db.transaction(async (tx) => {
        // The batch is the oldest expiries (a range scan of the expires_at index that stops at the
        // limit), reported in session order. Picking it in session_id order let the planner walk the
        // primary key and filter: with 100,000 live sessions sorting before 10,000 lapsed ones, every
        // batch read all 100,000 (771 ms a batch). SKIP LOCKED never waits, so the order in which the
        // rows are locked cannot deadlock; their locks are taken in key order (deleteLocksOfSessions).
        const rows = await tx.query(
          `SELECT * FROM (
             SELECT ${SESSION_COLUMNS}, ${DB_NOW} AS ended_at FROM holdfast_sessions WHERE expires_at <= ${DB_NOW}
             ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED) AS due
           ORDER BY session_id`,
          [limit],
        );
        if (rows.length === 0) return [];
        const sessions = rows.map(toSession);
        const ids = sessions.map((s) => s.sessionId);
        const locks = await deleteLocksOfSessions(tx, ids);
        await tx.query('DELETE FROM holdfast_sessions WHERE session_id = ANY($1)', [ids]);
        return sessions.map((session) => ({
          session,
          cause: 'ttl' as const,
          releasedLocks: locks.filter((l) => l.sessionId === session.sessionId),
        }));
      }),
    );
  }

  async listSessions(query: ListQuery): Promise<Page<SessionInfo>> {
    const after = decodeSessionCursor(query.cursor);
    const rows = await this.guard(() =>
      this.db.query(
        `WITH n AS (SELECT holdfast_now_ms() AS now)
         SELECT ${prefixed('s', SESSION_COLUMNS)},
           ((SELECT count(*) FROM holdfast_locks l WHERE l.session_id = s.session_id AND l.expires_at > n.now)
             + (SELECT count(*) FROM holdfast_holds h WHERE h.session_id = s.session_id AND h.expires_at > n.now))::int AS lock_count
         FROM holdfast_sessions s, n
         WHERE s.expires_at > n.now AND ($1::text IS NULL OR s.session_id > $1)
         ORDER BY s.session_id LIMIT $2`,
        [after, query.limit + 1],
      ),
    );
    const items = rows.slice(0, query.limit).map((r) => ({ ...toSession(r), lockCount: Number(r.lock_count) }));
    return { items, nextCursor: rows.length > query.limit ? encodeCursor(items.at(-1)!.sessionId) : null };
  }

  /** Ends a live session (checking its token when one is given) and deletes its locks. */
  private async endLiveSession(
    tx: Queryable,
    sessionId: string,
    cause: SessionEndCause,
    tokenHash?: string,
  ): Promise<EndedSession | SessionRefusal> {
    const rows = await tx.query(
      `SELECT ${SESSION_COLUMNS}, token_hash FROM holdfast_sessions WHERE session_id = $1 AND expires_at > ${DB_NOW} FOR UPDATE`,
      [sessionId],
    );
    if (!rows[0]) return { kind: 'session_not_found' };
    if (tokenHash !== undefined && rows[0].token_hash !== tokenHash) return { kind: 'unauthenticated' };
    const releasedLocks = await deleteLocksOfSessions(tx, [sessionId]);
    await tx.query('DELETE FROM holdfast_sessions WHERE session_id = $1', [sessionId]);
    return { session: toSession(rows[0]), cause, releasedLocks };
  }

  /** Maps "cannot take writes" failures to NOT_LEADER (sql-errors.ts). */
  private guard<T>(operation: () => Promise<T>): Promise<T> {
    return guardSql(this.backend, operation);
  }
}

/**
 * The sessions' grants end in one statement, after their rows are locked in key order: lock rows
 * and holds (migration 13), with the anchors their holds leave empty.
 */
async function deleteLocksOfSessions(tx: Queryable, sessionIds: string[]): Promise<EndedLock[]> {
  await tx.query(
    `SELECT key FROM holdfast_locks
     WHERE session_id = ANY($1) OR key IN (SELECT hh.key FROM holdfast_holds hh WHERE hh.session_id = ANY($1))
     ORDER BY key FOR UPDATE`,
    [sessionIds],
  );
  const rows = await tx.query(
    `WITH gone_holds AS (DELETE FROM holdfast_holds h WHERE h.session_id = ANY($1) RETURNING h.*),
     emptied AS (${EMPTIED_ANCHORS('gone_holds', 'gone_holds')}),
     gone_locks AS (DELETE FROM holdfast_locks WHERE session_id = ANY($1) RETURNING ${LOCK_COLUMNS}, NULL::text AS mode, NULL::integer AS holder_limit)
     SELECT *, ${DB_NOW} AS ended_at FROM gone_locks
     UNION ALL
     SELECT ${HOLD_COLUMNS}, ${DB_NOW} AS ended_at FROM gone_holds h LEFT JOIN holdfast_locks a ON a.key = h.key`,
    [sessionIds],
  );
  return rows.map(toEndedLock);
}
