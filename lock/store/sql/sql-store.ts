/**
 * The SQL lock store: one implementation, one SQL, over any SqlDatabase
 * (PostgreSQL through `pg`, or PGlite in-process for the embedded default).
 *
 * Row-lock order, everywhere: session rows (by session_id), then lock rows
 * (by key), then the audit head. Acquire takes a share lock on its own session
 * row, so a session cannot be ended while a grant to it is being written, and
 * no lock of a dead session survives an end-session transaction.
 */
import type { LockGrant } from '../../../contract/records.js';
import { createAuditSealer, type AuditSealer } from '../../audit/chain.js';
import { NotLeaderError } from '../../errors.js';
import { guardedDatabase, guardSql } from './sql-errors.js';
import type { AuditEntry, BackendName, FencingToken, Page, SessionEndCause, SessionInfo } from '../../../contract/records.js';
import type {
  AuditDraft,
  AuditHead,
  AuditQuery,
  CloseSessionResult,
  EndedLock,
  ReleaseFeed,
  EndedSession,
  ForceRevokeResult,
  HeartbeatResult,
  HeldLock,
  KillSessionResult,
  ListQuery,
  LockStore,
  ReleaseResult,
  RenewResult,
  SessionCredential,
  SessionRecord,
  SessionRefusal,
  StoreSummary,
  TryAcquireResult,
} from '../spi.js';
import type { Queryable, Row, SqlDatabase } from './queryable.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import { migrate } from './schema.js';
import { SqlFleet } from './sql-fleet.js';
import { StatementBatcher } from './statement-batcher.js';
import { acquireInRounds, type AcquireRequest, type AcquireRow } from './acquire-batch.js';

const LOCK_COLUMNS = `key, session_id, owner, fencing_token::text AS fencing_token, ttl_millis, granted_at, expires_at`;
const QUALIFIED_LOCK_COLUMNS = `l.key, l.session_id, l.owner, l.fencing_token::text AS fencing_token, l.ttl_millis, l.granted_at, l.expires_at`;
const SESSION_COLUMNS = `session_id, owner, ttl_millis, created_at, last_heartbeat_at, expires_at`;
const AUDIT_COLUMNS = `id::text AS id, at, actor, action, target, fencing_token::text AS fencing_token, reason, outcome, request_id, prev_hash, hash`;
/**
 * The database clock, read once per statement. An uncorrelated sub-select is an InitPlan:
 * evaluated once and usable as an index bound (a bare volatile call is neither). A statement
 * that blocks on a row lock keeps its earlier reading, which only ever errs towards "still
 * live" for a holder (no early grant) and towards a shorter new expiry.
 */
const DB_NOW = '(SELECT holdfast_now_ms())';
/** A lock is live while its TTL has not passed and its session is alive (store clock). */
const LIVE_LOCK = (alias: string, now = DB_NOW) =>
  `${alias}.expires_at > ${now} AND EXISTS (SELECT 1 FROM holdfast_sessions hs WHERE hs.session_id = ${alias}.session_id AND hs.expires_at > ${now})`;


interface ReleaseRequest {
  key: string;
  session: SessionCredential;
  fencingToken: FencingToken;
}

interface OpenSessionRequest {
  sessionId: string;
  owner: string;
  ttlMillis: number;
  tokenHash: string;
}

export interface SqlLockStoreOptions {
  /** Seals audit entries (keyed when HOLDFAST_AUDIT_KEY_FILE is set). */
  sealer?: AuditSealer;
}

export class SqlLockStore implements LockStore {
  private readonly releases = new StatementBatcher((batch: ReleaseRequest[]) => this.releaseBatch(batch));
  /** The fleet-wide wait state and the release feed (sql-fleet.ts), with the store's error mapping. */
  readonly fleet: SqlFleet;
  private readonly acquires = new StatementBatcher((batch: AcquireRequest[]) => this.acquireBatch(batch));
  // Group commit for the steady load: at most two heartbeat (and two open) statements in flight,
  // so 128 callers make a few large statements rather than a pool full of small ones.
  private readonly heartbeats = new StatementBatcher((batch: SessionCredential[]) => this.heartbeatBatch(batch), 512, 2);
  private readonly opens = new StatementBatcher((batch: OpenSessionRequest[]) => this.openSessionBatch(batch), 512, 2);
  private readonly sealer: AuditSealer;

  constructor(
    private readonly db: SqlDatabase,
    readonly backend: BackendName,
    options: SqlLockStoreOptions = {},
  ) {
    this.sealer = options.sealer ?? createAuditSealer();
    this.fleet = new SqlFleet(guardedDatabase(db, backend));
  }

  get releaseFeed(): ReleaseFeed {
    return this.fleet;
  }

  async init(): Promise<void> {
    await this.guard(() => migrate(this.db));
  }

  async close(): Promise<void> {
    await this.db.close();
  }

  /** Readiness and the health probe: answers only when the database takes writes (a read-only standby does not). */
  async ping(): Promise<void> {
    const [row] = await this.guard(() => this.db.query<{ read_only: string }>("SELECT current_setting('transaction_read_only') AS read_only"));
    if (row?.read_only === 'on') throw new NotLeaderError(`the ${this.backend} store is read-only (a standby, or default_transaction_read_only)`);
  }

  // ---- sessions -----------------------------------------------------------

  /** Concurrent opens share one INSERT (a random id never collides; if a batch fails, each is retried alone). */
  openSession(req: OpenSessionRequest): Promise<SessionRecord> {
    return this.opens.submit(req);
  }

  private async openSessionBatch(batch: OpenSessionRequest[]): Promise<SessionRecord[]> {
    const insert = (requests: OpenSessionRequest[]) =>
      this.guard(() =>
        this.db.query(
          `WITH n AS (SELECT holdfast_now_ms() AS now)
           INSERT INTO holdfast_sessions (${SESSION_COLUMNS}, token_hash)
           SELECT r.sid, r.owner, r.ttl, n.now, n.now, n.now + r.ttl, r.hash
           FROM unnest($1::text[], $2::text[], $3::integer[], $4::text[]) AS r(sid, owner, ttl, hash), n
           ORDER BY r.sid
           RETURNING ${SESSION_COLUMNS}`,
          [requests.map((r) => r.sessionId), requests.map((r) => r.owner), requests.map((r) => r.ttlMillis), requests.map((r) => r.tokenHash)],
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
        const entry = await this.appendAudit(tx, {
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

  async expireLocks(limit: number): Promise<EndedLock[]> {
    const rows = await this.guard(() =>
      this.db.query(
        // Only lapsed TTLs (an index range scan, oldest first, stopping at the limit; see
        // expireSessions for why not key order), deleted by primary key (= ANY(ARRAY(...)): an
        // IN (subquery) was planned as a hash join over every lock row): locks of ended sessions
        // go with their session in the same transaction, so there are no orphans to hunt for.
        `WITH n AS (SELECT holdfast_now_ms() AS now)
         DELETE FROM holdfast_locks WHERE key = ANY(ARRAY(
           SELECT l.key FROM holdfast_locks l WHERE l.expires_at <= ${DB_NOW}
           ORDER BY l.expires_at LIMIT $1 FOR UPDATE SKIP LOCKED))
         RETURNING ${LOCK_COLUMNS}, (SELECT now FROM n) AS ended_at`,
        [limit],
      ),
    );
    return rows.map(toEndedLock);
  }

  async listSessions(query: ListQuery): Promise<Page<SessionInfo>> {
    const after = decodeCursor(query.cursor);
    const rows = await this.guard(() =>
      this.db.query(
        `WITH n AS (SELECT holdfast_now_ms() AS now)
         SELECT ${prefixed('s', SESSION_COLUMNS)},
           (SELECT count(*) FROM holdfast_locks l WHERE l.session_id = s.session_id AND l.expires_at > n.now)::int AS lock_count
         FROM holdfast_sessions s, n
         WHERE s.expires_at > n.now AND ($1::text IS NULL OR s.session_id > $1)
         ORDER BY s.session_id LIMIT $2`,
        [after, query.limit + 1],
      ),
    );
    const items = rows.slice(0, query.limit).map((r) => ({ ...toSession(r), lockCount: Number(r.lock_count) }));
    return { items, nextCursor: rows.length > query.limit ? encodeCursor(items.at(-1)!.sessionId) : null };
  }

  // ---- locks --------------------------------------------------------------

  /** Concurrent try-acquires share one call (group commit, acquire-batch.ts); each gets its own answer. */
  async tryAcquire(req: AcquireRequest): Promise<TryAcquireResult> {
    const row = await this.acquires.submit(req);
    if (row instanceof Error) throw row;
    switch (row.kind) {
      case 'session_not_found':
      case 'unauthenticated':
        return { kind: row.kind };
      case 'held':
        return { kind: 'held', holder: toLock(row) };
      default: {
        const lock = toLock(row);
        return { kind: 'granted', grant: toGrant(lock), owner: lock.owner, existing: row.kind === 'existing' };
      }
    }
  }

  async renew(req: { key: string; session: SessionCredential; fencingToken: FencingToken; ttlMillis?: number }): Promise<RenewResult> {
    const rows = await this.guard(() =>
      this.db.query(
        // Without a TTL the grant keeps its own: a renew never shortens a lock by accident.
        `UPDATE holdfast_locks l
         SET ttl_millis = COALESCE($5::integer, l.ttl_millis), expires_at = n.now + COALESCE($5::integer, l.ttl_millis)
         FROM holdfast_sessions s, (SELECT holdfast_now_ms() AS now) n
         WHERE l.key = $1 AND l.fencing_token = $2::bigint AND l.session_id = $3 AND l.expires_at > n.now
           AND s.session_id = $3 AND s.token_hash = $4 AND s.expires_at > n.now
         RETURNING ${QUALIFIED_LOCK_COLUMNS}`,
        [req.key, req.fencingToken, req.session.sessionId, req.session.tokenHash, req.ttlMillis ?? null],
      ),
    );
    if (rows[0]) return { kind: 'renewed', lock: toLock(rows[0]) };
    return (await this.refusal(this.db, req.session)) ?? { kind: 'lost' };
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

  /** Compare-and-delete on (key, token) of the caller's live grant; concurrent releases share one statement. */
  release(req: ReleaseRequest): Promise<ReleaseResult> {
    return this.releases.submit(req);
  }

  private async releaseBatch(batch: ReleaseRequest[]): Promise<ReleaseResult[]> {
    const rows =
      batch.length === 1
        ? await this.guard(() =>
            this.db.query(
              `DELETE FROM holdfast_locks l USING holdfast_sessions s, (SELECT holdfast_now_ms() AS now) n
               WHERE l.key = $1 AND l.fencing_token = $2::bigint AND l.session_id = $3 AND l.expires_at > n.now
                 AND s.session_id = $3 AND s.token_hash = $4 AND s.expires_at > n.now
               RETURNING ${QUALIFIED_LOCK_COLUMNS}, n.now AS ended_at`,
              [batch[0]!.key, batch[0]!.fencingToken, batch[0]!.session.sessionId, batch[0]!.session.tokenHash],
            ),
          )
        : await this.guard(() =>
            // Rows are locked in key order (the sort sits below the row locks), like every multi-row writer.
            this.db.query(
              `WITH n AS (SELECT holdfast_now_ms() AS now),
               r AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[]) AS r(key, token, sid, hash)),
               target AS (
                 SELECT l.key FROM holdfast_locks l JOIN r ON l.key = r.key AND l.fencing_token = r.token AND l.session_id = r.sid
                 ORDER BY l.key FOR UPDATE OF l)
               DELETE FROM holdfast_locks l USING r, n, holdfast_sessions s
               WHERE l.key IN (SELECT key FROM target) AND l.key = r.key AND l.fencing_token = r.token AND l.session_id = r.sid
                 AND l.expires_at > n.now AND s.session_id = r.sid AND s.token_hash = r.hash AND s.expires_at > n.now
               RETURNING ${QUALIFIED_LOCK_COLUMNS}, n.now AS ended_at`,
              [batch.map((b) => b.key), batch.map((b) => b.fencingToken), batch.map((b) => b.session.sessionId), batch.map((b) => b.session.tokenHash)],
            ),
          );
    const deleted = new Map(rows.map((row) => [`${String(row.key)}\u0000${String(row.fencing_token)}`, row]));
    const results: ReleaseResult[] = [];
    for (const b of batch) {
      const id = `${b.key}\u0000${b.fencingToken}`;
      const row = deleted.get(id);
      if (row) {
        // A key released twice in one batch: only the first caller gets the deleted row.
        deleted.delete(id);
        results.push({ kind: 'released', lock: toEndedLock(row) });
      } else {
        // Only a failure pays for the diagnosis: whose session, and was the token right.
        results.push((await this.guard(() => this.refusal(this.db, b.session))) ?? { kind: 'lost' });
      }
    }
    return results;
  }

  async readLock(key: string): Promise<HeldLock | null> {
    const rows = await this.guard(() =>
      this.db.query(`SELECT ${LOCK_COLUMNS} FROM holdfast_locks l WHERE l.key = $1 AND ${LIVE_LOCK('l')}`, [key]),
    );
    return rows[0] ? toLock(rows[0]) : null;
  }

  async listLocks(query: ListQuery & { prefix?: string }): Promise<Page<HeldLock>> {
    const after = decodeCursor(query.cursor);
    const rows = await this.guard(() =>
      this.db.query(
        `SELECT ${LOCK_COLUMNS} FROM holdfast_locks l
         WHERE ${LIVE_LOCK('l')}
           AND ($1::text IS NULL OR starts_with(l.key, $1))
           AND ($2::text IS NULL OR l.key > $2)
         ORDER BY l.key LIMIT $3`,
        [query.prefix || null, after, query.limit + 1],
      ),
    );
    const items = rows.slice(0, query.limit).map(toLock);
    return { items, nextCursor: rows.length > query.limit ? encodeCursor(items.at(-1)!.key) : null };
  }

  async forceRevoke(req: { key: string; expectedFencingToken?: FencingToken; audit: AuditDraft }): Promise<ForceRevokeResult> {
    return this.guard(() =>
      this.db.transaction(async (tx) => {
        const rows = await tx.query(
          `SELECT ${LOCK_COLUMNS}, (${LIVE_LOCK('l')}) AS live, ${DB_NOW} AS ended_at FROM holdfast_locks l WHERE l.key = $1 FOR UPDATE`,
          [req.key],
        );
        const current = rows[0] && rows[0].live ? toEndedLock(rows[0]) : undefined;
        let outcome: ForceRevokeResult['outcome'];
        if (!current) outcome = 'NOT_HELD';
        else if (req.expectedFencingToken !== undefined && req.expectedFencingToken !== current.fencingToken)
          outcome = 'TOKEN_MISMATCH';
        else outcome = 'REVOKED';
        if (outcome === 'REVOKED') {
          await tx.query('DELETE FROM holdfast_locks WHERE key = $1', [req.key]);
        }
        const audit = await this.appendAudit(tx, {
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

  // ---- audit --------------------------------------------------------------

  async listAudit(query: AuditQuery): Promise<Page<AuditEntry>> {
    const before = decodeCursor(query.cursor, /^[1-9][0-9]{0,17}$/);
    const rows = await this.guard(() =>
      this.db.query(
        `SELECT ${AUDIT_COLUMNS} FROM holdfast_audit
         WHERE ($1::bigint IS NULL OR id < $1::bigint)
           AND ($3::text IS NULL OR actor = $3) AND ($4::text IS NULL OR action = $4) AND ($5::text IS NULL OR target = $5)
         ORDER BY id DESC LIMIT $2`,
        [before, query.limit + 1, query.actor ?? null, query.action ?? null, query.target ?? null],
      ),
    );
    const items = rows.slice(0, query.limit).map(toAudit);
    return { items, nextCursor: rows.length > query.limit ? encodeCursor(items.at(-1)!.id) : null };
  }

  async *readAuditChain(): AsyncIterable<AuditEntry> {
    let after = 0;
    for (;;) {
      const rows = await this.guard(() =>
        this.db.query(`SELECT ${AUDIT_COLUMNS} FROM holdfast_audit WHERE id > $1 ORDER BY id LIMIT 500`, [after]),
      );
      for (const row of rows) yield toAudit(row);
      if (rows.length < 500) return;
      after = Number(rows.at(-1)!.id);
    }
  }

  async readAuditHead(): Promise<AuditHead> {
    const rows = await this.guard(() => this.db.query('SELECT last_id::text AS last_id, last_hash FROM holdfast_audit_head'));
    return { lastId: String(rows[0]!.last_id), lastHash: String(rows[0]!.last_hash) };
  }

  async summary(): Promise<StoreSummary> {
    const rows = await this.guard(() =>
      this.db.query(
        `WITH n AS (SELECT holdfast_now_ms() AS now),
         live AS (SELECT l.granted_at FROM holdfast_locks l, n WHERE ${LIVE_LOCK('l', 'n.now')})
         SELECT
           (SELECT count(*) FROM live)::int AS held,
           (SELECT count(*) FROM holdfast_sessions s, n WHERE s.expires_at > n.now)::int AS sessions,
           COALESCE((SELECT n.now - min(granted_at) FROM live, n GROUP BY n.now), 0) AS oldest,
           -- Two index-ordered min() reads: the oldest expiry still in each table.
           (SELECT n.now - LEAST(COALESCE((SELECT min(expires_at) FROM holdfast_sessions), n.now),
                                 COALESCE((SELECT min(expires_at) FROM holdfast_locks), n.now)) FROM n) AS overdue`,
      ),
    );
    return {
      heldLocks: Number(rows[0]!.held),
      activeSessions: Number(rows[0]!.sessions),
      oldestHeldMillis: Math.max(0, Number(rows[0]!.oldest)),
      sweepLagMillis: Math.max(0, Number(rows[0]!.overdue)),
    };
  }

  // ---- internals ----------------------------------------------------------

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

  private async appendAudit(
    tx: Queryable,
    draft: AuditDraft & Pick<AuditEntry, 'action' | 'target' | 'outcome'> & { fencingToken?: FencingToken | undefined },
  ): Promise<AuditEntry> {
    const head = (await tx.query(`SELECT last_id, last_hash, ${DB_NOW} AS now FROM holdfast_audit_head FOR UPDATE`))[0]!;
    const entry = this.sealer.seal(String(head.last_hash), {
      id: String(Number(head.last_id) + 1),
      at: Number(head.now),
      actor: draft.actor,
      action: draft.action,
      target: draft.target,
      ...(draft.fencingToken !== undefined ? { fencingToken: draft.fencingToken } : {}),
      reason: draft.reason,
      outcome: draft.outcome,
      requestId: draft.requestId,
    });
    await tx.query(
      `INSERT INTO holdfast_audit (id, at, actor, action, target, fencing_token, reason, outcome, request_id, prev_hash, hash)
       VALUES ($1::bigint, $2, $3, $4, $5, $6::bigint, $7, $8, $9, $10, $11)`,
      [
        entry.id,
        entry.at,
        entry.actor,
        entry.action,
        entry.target,
        entry.fencingToken ?? null,
        entry.reason,
        entry.outcome,
        entry.requestId,
        entry.prevHash,
        entry.hash,
      ],
    );
    await tx.query('UPDATE holdfast_audit_head SET last_id = $1::bigint, last_hash = $2', [entry.id, entry.hash]);
    return entry;
  }

  /** Maps "cannot take writes" failures to NOT_LEADER (sql-errors.ts). */
  private guard<T>(operation: () => Promise<T>): Promise<T> {
    return guardSql(this.backend, operation);
  }
}

async function deleteLocksOfSessions(tx: Queryable, sessionIds: string[]): Promise<EndedLock[]> {
  await tx.query('SELECT key FROM holdfast_locks WHERE session_id = ANY($1) ORDER BY key FOR UPDATE', [sessionIds]);
  const rows = await tx.query(
    `DELETE FROM holdfast_locks WHERE session_id = ANY($1) RETURNING ${LOCK_COLUMNS}, ${DB_NOW} AS ended_at`,
    [sessionIds],
  );
  return rows.map(toEndedLock);
}

function prefixed(alias: string, columns: string): string {
  return columns
    .split(',')
    .map((c) => `${alias}.${c.trim()}`)
    .join(', ');
}

function toSession(r: Row): SessionRecord {
  return {
    sessionId: String(r.session_id),
    owner: String(r.owner),
    ttlMillis: Number(r.ttl_millis),
    createdAt: Number(r.created_at),
    lastHeartbeatAt: Number(r.last_heartbeat_at),
    expiresAt: Number(r.expires_at),
  };
}

function toLock(r: Row): HeldLock {
  return {
    key: String(r.key),
    sessionId: String(r.session_id),
    owner: String(r.owner),
    fencingToken: String(r.fencing_token),
    ttlMillis: Number(r.ttl_millis),
    grantedAt: Number(r.granted_at),
    expiresAt: Number(r.expires_at),
  };
}

function toEndedLock(r: Row): EndedLock {
  return { ...toLock(r), endedAt: Number(r.ended_at) };
}

function withoutEnd(lock: EndedLock): HeldLock {
  const { endedAt: _endedAt, ...held } = lock;
  return held;
}

function toGrant(lock: HeldLock): LockGrant {
  const { owner: _owner, ...grant } = lock;
  return grant;
}

function toAudit(r: Row): AuditEntry {
  return {
    id: String(r.id),
    at: Number(r.at),
    actor: String(r.actor),
    action: String(r.action) as AuditEntry['action'],
    target: String(r.target),
    ...(r.fencing_token !== null && r.fencing_token !== undefined ? { fencingToken: String(r.fencing_token) } : {}),
    reason: String(r.reason),
    outcome: String(r.outcome),
    requestId: String(r.request_id),
    prevHash: String(r.prev_hash),
    hash: String(r.hash),
  };
}
