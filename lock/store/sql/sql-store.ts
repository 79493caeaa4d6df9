/**
 * The SQL lock store: one implementation, one SQL, over any SqlDatabase
 * (PostgreSQL through `pg`, or PGlite in-process for the embedded default).
 *
 * Row-lock order, everywhere: session rows (by session_id), then lock rows
 * (by key), then the audit head. Acquire takes a share lock on its own session
 * row, so a session cannot be ended while a grant to it is being written, and
 * no lock of a dead session survives an end-session transaction.
 */
import { sealAuditEntry } from '../../audit/chain.js';
import { NotLeaderError, ValidationFailedError } from '../../errors.js';
import type { AuditEntry, BackendName, FencingToken, LockGrant, Page, SessionEndCause, SessionInfo } from '../../../contract/records.js';
import type {
  AuditDraft,
  AuditQuery,
  EndedSession,
  ForceRevokeResult,
  HeldLock,
  KillSessionResult,
  ListQuery,
  LockStore,
  SessionRecord,
  StoreSummary,
  TryAcquireResult,
} from '../spi.js';
import type { Queryable, Row, SqlDatabase } from './queryable.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import { migrate } from './schema.js';
import { StatementBatcher } from './statement-batcher.js';

const LOCK_COLUMNS = `key, session_id, owner, fencing_token::text AS fencing_token, ttl_millis, granted_at, expires_at`;
const SESSION_COLUMNS = `session_id, owner, ttl_millis, created_at, last_heartbeat_at, expires_at`;
const AUDIT_COLUMNS = `id::text AS id, at, actor, action, target, fencing_token::text AS fencing_token, reason, outcome, request_id, prev_hash, hash`;
/** A lock is live while its TTL has not passed and its session is alive. */
const LIVE_LOCK = (alias: string, nowParam: string) =>
  `${alias}.expires_at > ${nowParam} AND EXISTS (SELECT 1 FROM holdfast_sessions hs WHERE hs.session_id = ${alias}.session_id AND hs.expires_at > ${nowParam})`;

/** PostgreSQL SQLSTATEs that mean "cannot take writes now", answered 503 NOT_LEADER. */
const NOT_LEADER_STATES = new Set(['25006', '57P01', '57P02', '57P03', '08000', '08003', '08006', '08001', '08004']);
const NOT_LEADER_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']);

export class SqlLockStore implements LockStore {
  private readonly releases = new StatementBatcher((batch: { key: string; fencingToken: FencingToken; now: number }[]) =>
    this.releaseBatch(batch),
  );

  constructor(
    private readonly db: SqlDatabase,
    readonly backend: BackendName,
  ) {}

  async init(): Promise<void> {
    await this.guard(() => migrate(this.db));
  }

  async close(): Promise<void> {
    await this.db.close();
  }

  async ping(): Promise<void> {
    await this.guard(() => this.db.query('SELECT 1'));
  }

  // ---- sessions -----------------------------------------------------------

  async openSession(session: SessionRecord): Promise<SessionRecord> {
    const rows = await this.guard(() =>
      this.db.query(
        `INSERT INTO holdfast_sessions (${SESSION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${SESSION_COLUMNS}`,
        [session.sessionId, session.owner, session.ttlMillis, session.createdAt, session.lastHeartbeatAt, session.expiresAt],
      ),
    );
    return toSession(rows[0]!);
  }

  async heartbeat(sessionId: string, now: number): Promise<SessionRecord | null> {
    const rows = await this.guard(() =>
      this.db.query(
        `UPDATE holdfast_sessions SET last_heartbeat_at = $2::bigint, expires_at = $2::bigint + ttl_millis
         WHERE session_id = $1 AND expires_at > $2 RETURNING ${SESSION_COLUMNS}`,
        [sessionId, now],
      ),
    );
    return rows[0] ? toSession(rows[0]) : null;
  }

  async getSession(sessionId: string, now: number): Promise<SessionRecord | null> {
    const rows = await this.guard(() =>
      this.db.query(`SELECT ${SESSION_COLUMNS} FROM holdfast_sessions WHERE session_id = $1 AND expires_at > $2`, [
        sessionId,
        now,
      ]),
    );
    return rows[0] ? toSession(rows[0]) : null;
  }

  async closeSession(sessionId: string, now: number): Promise<EndedSession | null> {
    return this.guard(() => this.db.transaction((tx) => this.endLiveSession(tx, sessionId, now, 'closed')));
  }

  async killSession(sessionId: string, now: number, audit: AuditDraft): Promise<KillSessionResult> {
    return this.guard(() =>
      this.db.transaction(async (tx) => {
        const ended = await this.endLiveSession(tx, sessionId, now, 'killed');
        const entry = await appendAudit(tx, {
          ...audit,
          action: 'session.kill',
          target: sessionId,
          outcome: ended ? 'KILLED' : 'NOT_FOUND',
        });
        return { ended, audit: entry };
      }),
    );
  }

  async expireSessions(now: number, limit: number): Promise<EndedSession[]> {
    return this.guard(() =>
      this.db.transaction(async (tx) => {
        const sessions = (
          await tx.query(
            `SELECT ${SESSION_COLUMNS} FROM holdfast_sessions WHERE expires_at <= $1
             ORDER BY session_id LIMIT $2 FOR UPDATE SKIP LOCKED`,
            [now, limit],
          )
        ).map(toSession);
        if (sessions.length === 0) return [];
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

  async expireLocks(now: number, limit: number): Promise<HeldLock[]> {
    const rows = await this.guard(() =>
      this.db.query(
        // Only lapsed TTLs (an index range scan): locks of ended sessions go with their
        // session in the same transaction, so there are no orphans to hunt for.
        `DELETE FROM holdfast_locks WHERE key IN (
           SELECT l.key FROM holdfast_locks l WHERE l.expires_at <= $1::bigint
           ORDER BY l.key LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING ${LOCK_COLUMNS}`,
        [now, limit],
      ),
    );
    return rows.map(toLock);
  }

  async listSessions(query: ListQuery, now: number): Promise<Page<SessionInfo>> {
    const after = decodeCursor(query.cursor);
    const rows = await this.guard(() =>
      this.db.query(
        `SELECT ${SESSION_COLUMNS},
           (SELECT count(*) FROM holdfast_locks l WHERE l.session_id = s.session_id AND l.expires_at > $1)::int AS lock_count
         FROM holdfast_sessions s
         WHERE s.expires_at > $1 AND ($2::text IS NULL OR s.session_id > $2)
         ORDER BY s.session_id LIMIT $3`,
        [now, after, query.limit + 1],
      ),
    );
    const items = rows.slice(0, query.limit).map((r) => ({ ...toSession(r), lockCount: Number(r.lock_count) }));
    return { items, nextCursor: rows.length > query.limit ? encodeCursor(items.at(-1)!.sessionId) : null };
  }

  // ---- locks --------------------------------------------------------------

  async tryAcquire(req: { key: string; sessionId: string; ttlMillis: number; now: number }): Promise<TryAcquireResult> {
    // A row inserted by a transaction that committed after this statement's snapshot can be
    // seen by ON CONFLICT but not by the holder read; the next statement sees it.
    for (let attempt = 0; ; attempt++) {
      const rows = await this.guard(() => this.db.query(TRY_ACQUIRE_SQL, [req.key, req.sessionId, req.ttlMillis, req.now]));
      const row = rows[0];
      if (!row) {
        if (attempt < 5) continue;
        throw new Error(`tryAcquire on ${JSON.stringify(req.key)} saw neither a grant nor a holder`);
      }
      if (row.kind === 'no_session') return { kind: 'session_not_found' };
      const lock = toLock(row);
      if (row.kind === 'granted') {
        // Fresh insert: the drawn token. Takeover: a new token, granted now. Otherwise the caller's existing grant.
        const existing = row.drawn_token !== lock.fencingToken && lock.grantedAt !== req.now;
        return { kind: 'granted', grant: toGrant(lock), owner: lock.owner, existing };
      }
      return { kind: 'held', holder: lock };
    }
  }

  async renew(req: {
    key: string;
    sessionId: string;
    fencingToken: FencingToken;
    ttlMillis: number;
    now: number;
  }): Promise<HeldLock | null> {
    const rows = await this.guard(() =>
      this.db.query(
        `UPDATE holdfast_locks l SET ttl_millis = $4::integer, expires_at = $5::bigint + $4::integer
         WHERE l.key = $1 AND l.fencing_token = $2::bigint AND l.session_id = $3 AND ${LIVE_LOCK('l', '$5')}
         RETURNING ${LOCK_COLUMNS}`,
        [req.key, req.fencingToken, req.sessionId, req.ttlMillis, req.now],
      ),
    );
    return rows[0] ? toLock(rows[0]) : null;
  }

  /** Compare-and-delete on (key, token); concurrent releases share one statement. */
  release(req: { key: string; fencingToken: FencingToken; now: number }): Promise<HeldLock | null> {
    return this.releases.submit(req);
  }

  private async releaseBatch(batch: { key: string; fencingToken: FencingToken; now: number }[]): Promise<(HeldLock | null)[]> {
    const rows =
      batch.length === 1
        ? await this.guard(() =>
            this.db.query(
              `DELETE FROM holdfast_locks l WHERE l.key = $1 AND l.fencing_token = $2::bigint
               RETURNING ${LOCK_COLUMNS}, (${LIVE_LOCK('l', '$3::bigint')}) AS live`,
              [batch[0]!.key, batch[0]!.fencingToken, batch[0]!.now],
            ),
          )
        : await this.guard(() =>
            // Rows are locked in key order (the sort sits below the row locks), like every multi-row writer.
            this.db.query(
              `WITH r AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS r(key, token, now)),
               target AS (
                 SELECT l.key FROM holdfast_locks l JOIN r ON l.key = r.key AND l.fencing_token = r.token
                 ORDER BY l.key FOR UPDATE OF l)
               DELETE FROM holdfast_locks l USING r
               WHERE l.key IN (SELECT key FROM target) AND l.key = r.key AND l.fencing_token = r.token
               RETURNING ${LOCK_COLUMNS.replace('key,', 'l.key,').replace('fencing_token::text', 'l.fencing_token::text')},
                 (${LIVE_LOCK('l', 'r.now')}) AS live`,
              [batch.map((b) => b.key), batch.map((b) => b.fencingToken), batch.map((b) => b.now)],
            ),
          );
    // A grant that had already lapsed is gone whoever deletes the row: report it lost.
    const deleted = new Map(rows.map((row) => [`${String(row.key)}\u0000${String(row.fencing_token)}`, row]));
    return batch.map((b) => {
      const row = deleted.get(`${b.key}\u0000${b.fencingToken}`);
      // A key released twice in one batch: only the first caller gets the deleted row.
      if (row) deleted.delete(`${b.key}\u0000${b.fencingToken}`);
      return row && row.live ? toLock(row) : null;
    });
  }

  async readLock(key: string, now: number): Promise<HeldLock | null> {
    const rows = await this.guard(() =>
      this.db.query(`SELECT ${LOCK_COLUMNS} FROM holdfast_locks l WHERE l.key = $1 AND ${LIVE_LOCK('l', '$2')}`, [key, now]),
    );
    return rows[0] ? toLock(rows[0]) : null;
  }

  async listLocks(query: ListQuery & { prefix?: string }, now: number): Promise<Page<HeldLock>> {
    const after = decodeCursor(query.cursor);
    const rows = await this.guard(() =>
      this.db.query(
        `SELECT ${LOCK_COLUMNS} FROM holdfast_locks l
         WHERE ${LIVE_LOCK('l', '$1')}
           AND ($2::text IS NULL OR starts_with(l.key, $2))
           AND ($3::text IS NULL OR l.key > $3)
         ORDER BY l.key LIMIT $4`,
        [now, query.prefix || null, after, query.limit + 1],
      ),
    );
    const items = rows.slice(0, query.limit).map(toLock);
    return { items, nextCursor: rows.length > query.limit ? encodeCursor(items.at(-1)!.key) : null };
  }

  async forceRevoke(req: {
    key: string;
    expectedFencingToken?: FencingToken;
    now: number;
    audit: AuditDraft;
  }): Promise<ForceRevokeResult> {
    return this.guard(() =>
      this.db.transaction(async (tx) => {
        const rows = await tx.query(
          `SELECT ${LOCK_COLUMNS}, (${LIVE_LOCK('l', '$2')}) AS live FROM holdfast_locks l WHERE l.key = $1 FOR UPDATE`,
          [req.key, req.now],
        );
        const current = rows[0] && rows[0].live ? toLock(rows[0]) : undefined;
        let outcome: ForceRevokeResult['outcome'];
        if (!current) outcome = 'NOT_HELD';
        else if (req.expectedFencingToken !== undefined && req.expectedFencingToken !== current.fencingToken)
          outcome = 'TOKEN_MISMATCH';
        else outcome = 'REVOKED';
        if (outcome === 'REVOKED') {
          await tx.query('DELETE FROM holdfast_locks WHERE key = $1', [req.key]);
        }
        const audit = await appendAudit(tx, {
          ...req.audit,
          action: 'lock.revoke',
          target: req.key,
          fencingToken: outcome === 'REVOKED' ? current!.fencingToken : req.expectedFencingToken,
          outcome,
        });
        return {
          outcome,
          ...(outcome === 'REVOKED' ? { revoked: current } : {}),
          ...(outcome === 'TOKEN_MISMATCH' ? { holder: current } : {}),
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

  async summary(now: number): Promise<StoreSummary> {
    const rows = await this.guard(() =>
      this.db.query(
        `SELECT
           (SELECT count(*) FROM holdfast_locks l WHERE ${LIVE_LOCK('l', '$1')})::int AS held,
           (SELECT count(*) FROM holdfast_sessions WHERE expires_at > $1)::int AS sessions`,
        [now],
      ),
    );
    return { heldLocks: Number(rows[0]!.held), activeSessions: Number(rows[0]!.sessions) };
  }

  // ---- internals ----------------------------------------------------------

  private async endLiveSession(
    tx: Queryable,
    sessionId: string,
    now: number,
    cause: SessionEndCause,
  ): Promise<EndedSession | null> {
    const rows = await tx.query(
      `SELECT ${SESSION_COLUMNS} FROM holdfast_sessions WHERE session_id = $1 AND expires_at > $2 FOR UPDATE`,
      [sessionId, now],
    );
    if (!rows[0]) return null;
    const releasedLocks = await deleteLocksOfSessions(tx, [sessionId]);
    await tx.query('DELETE FROM holdfast_sessions WHERE session_id = $1', [sessionId]);
    return { session: toSession(rows[0]), cause, releasedLocks };
  }

  /** Maps "cannot take writes" failures to NOT_LEADER; everything else propagates as is. */
  private async guard<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      const e = error as { code?: string; message?: string };
      if ((e.code && (NOT_LEADER_STATES.has(e.code) || NOT_LEADER_ERRNOS.has(e.code))) || /Connection terminated/i.test(e.message ?? '')) {
        throw new NotLeaderError(`the ${this.backend} store cannot take writes: ${e.message ?? e.code}`);
      }
      // Class 22 (data exception): a value PostgreSQL cannot take slipped past validation; it is input, not a bug.
      if (typeof e.code === 'string' && e.code.startsWith('22')) {
        throw new ValidationFailedError(`the ${this.backend} store refused a value: ${e.message ?? e.code}`);
      }
      throw error;
    }
  }
}

/**
 * One statement: grant if free (absent, lapsed, or its session dead), keep the
 * existing grant if the caller already holds it, else report the holder.
 */
const TRY_ACQUIRE_SQL = `
WITH s AS (
  SELECT session_id, owner FROM holdfast_sessions
  WHERE session_id = $2::text AND expires_at > $4::bigint
  FOR SHARE
),
drawn AS (
  SELECT nextval('holdfast_fencing_seq')::text AS token FROM s
),
ins AS (
  INSERT INTO holdfast_locks AS l (key, session_id, owner, fencing_token, ttl_millis, granted_at, expires_at)
  SELECT $1::text, s.session_id, s.owner, drawn.token::bigint, $3::integer, $4, $4 + $3::integer FROM s, drawn
  ON CONFLICT (key) DO UPDATE SET
    session_id    = EXCLUDED.session_id,
    owner         = EXCLUDED.owner,
    -- A takeover draws its token here, after the row lock is held: a token drawn before
    -- blocking on a busy row could commit behind later tokens of other keys.
    fencing_token = CASE WHEN l.session_id = EXCLUDED.session_id AND ${LIVE_LOCK('l', '$4')} THEN l.fencing_token ELSE nextval('holdfast_fencing_seq') END,
    ttl_millis    = CASE WHEN l.session_id = EXCLUDED.session_id AND ${LIVE_LOCK('l', '$4')} THEN l.ttl_millis ELSE EXCLUDED.ttl_millis END,
    granted_at    = CASE WHEN l.session_id = EXCLUDED.session_id AND ${LIVE_LOCK('l', '$4')} THEN l.granted_at ELSE EXCLUDED.granted_at END,
    expires_at    = CASE WHEN l.session_id = EXCLUDED.session_id AND ${LIVE_LOCK('l', '$4')} THEN l.expires_at ELSE EXCLUDED.expires_at END
  WHERE l.session_id = EXCLUDED.session_id OR NOT (${LIVE_LOCK('l', '$4')})
  RETURNING ${LOCK_COLUMNS}
)
SELECT 'granted' AS kind, ins.*, (SELECT token FROM drawn) AS drawn_token FROM ins
UNION ALL
SELECT 'no_session', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL WHERE NOT EXISTS (SELECT 1 FROM s)
UNION ALL
SELECT 'held', ${LOCK_COLUMNS}, NULL FROM holdfast_locks h
WHERE h.key = $1 AND EXISTS (SELECT 1 FROM s) AND NOT EXISTS (SELECT 1 FROM ins)
`;

async function deleteLocksOfSessions(tx: Queryable, sessionIds: string[]): Promise<HeldLock[]> {
  await tx.query('SELECT key FROM holdfast_locks WHERE session_id = ANY($1) ORDER BY key FOR UPDATE', [sessionIds]);
  const rows = await tx.query(`DELETE FROM holdfast_locks WHERE session_id = ANY($1) RETURNING ${LOCK_COLUMNS}`, [sessionIds]);
  return rows.map(toLock);
}

async function appendAudit(
  tx: Queryable,
  draft: AuditDraft & Pick<AuditEntry, 'action' | 'target' | 'outcome'> & { fencingToken?: FencingToken },
): Promise<AuditEntry> {
  const head = (await tx.query('SELECT last_id, last_hash FROM holdfast_audit_head FOR UPDATE'))[0]!;
  const entry = sealAuditEntry(String(head.last_hash), {
    id: String(Number(head.last_id) + 1),
    at: draft.at,
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
