/**
 * The grants of keys that admit several holders (shared mode, semaphores; migration 13): each is a
 * row of holdfast_holds under its key's anchor row in holdfast_locks. Admission is in the acquire
 * function (holdfast_admit_holder); here are the other writes and the reads. Every write that ends
 * a hold takes its anchor's row lock first (keys in order, after any session row), so it
 * serializes with admission, whose recorded waits it then sees; a statement trigger on the table
 * announces each end (release feed, holder watch). An anchor left without holds goes in the write
 * that ended its last one (or with the sweep).
 */
import type { FencingToken } from '../../../contract/records.js';
import type { EndedLock, HeldLock, RenewRequest, SessionCredential } from '../spi.js';
import type { Queryable } from './queryable.js';
import { DB_NOW, LIVE_LOCK, toEndedLock, toLock } from './sql-rows.js';

/** A hold's columns with its key's mode and limit (from the anchor), as toLock reads them. */
export const HOLD_COLUMNS = `h.key, h.session_id, h.owner, h.fencing_token::text AS fencing_token, h.ttl_millis, h.granted_at, h.expires_at, h.value,
  a.mode, a.holder_limit`;

/** Locks the anchors among `keys`, in key order (after any session row, before anything else); answers how many. */
export async function lockAnchors(tx: Queryable, keys: readonly string[]): Promise<number> {
  return (await tx.query('SELECT key FROM holdfast_locks WHERE key = ANY($1::text[]) AND mode IS NOT NULL ORDER BY key FOR UPDATE', [keys])).length;
}

/**
 * Deletes the anchors among `keys` with no hold left but those just ended (`ended`: key and
 * session pairs deleted earlier in the same statement, which its snapshot still sees).
 */
export const EMPTIED_ANCHORS = (keys: string, ended: string) => `DELETE FROM holdfast_locks l WHERE l.key IN (SELECT key FROM ${keys}) AND l.mode IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM holdfast_holds o WHERE o.key = l.key
                  AND NOT EXISTS (SELECT 1 FROM ${ended} e WHERE e.key = o.key AND e.session_id = o.session_id))`;

export interface HoldRelease {
  key: string;
  session: SessionCredential;
  fencingToken: FencingToken;
}

/** Compare-and-delete of the callers' live holds, in one transaction; answers the ended holds by request index. */
export async function releaseHolds(tx: Queryable, batch: readonly HoldRelease[]): Promise<Map<number, EndedLock>> {
  // No anchor among the keys: no hold to end (a stale or foreign token of a mutex key pays one read).
  if ((await lockAnchors(tx, batch.map((b) => b.key))) === 0) return new Map();
  const rows = await tx.query(
    `WITH n AS (SELECT holdfast_now_ms() AS now),
     r AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[]) WITH ORDINALITY AS r(k, t, sid, hash, ord)),
     gone AS (
       DELETE FROM holdfast_holds h USING r, n
       WHERE h.key = r.k AND h.fencing_token = r.t AND h.session_id = r.sid AND h.expires_at > n.now
         AND EXISTS (SELECT 1 FROM holdfast_sessions s WHERE s.session_id = r.sid AND s.token_hash = r.hash AND s.expires_at > n.now)
       RETURNING r.ord, h.*, n.now AS ended_at),
     emptied AS (${EMPTIED_ANCHORS('gone', 'gone')})
     SELECT h.ord, ${HOLD_COLUMNS}, h.ended_at FROM gone h LEFT JOIN holdfast_locks a ON a.key = h.key`,
    [batch.map((b) => b.key), batch.map((b) => b.fencingToken), batch.map((b) => b.session.sessionId), batch.map((b) => b.session.tokenHash)],
  );
  return new Map(rows.map((row) => [Number(row.ord) - 1, toEndedLock(row)]));
}

/** Renew (or proclaim) of the caller's live hold: migration 13's twin of the lock-row renew. */
export async function renewHold(db: Queryable, req: RenewRequest): Promise<HeldLock | null> {
  const rows = await db.query(
    `WITH renewed AS (
       UPDATE holdfast_holds h
       SET ttl_millis = COALESCE($5::integer, h.ttl_millis), expires_at = n.now + COALESCE($5::integer, h.ttl_millis),
           value = COALESCE($7::text, h.value)
       FROM holdfast_sessions s, (SELECT holdfast_now_ms() AS now) n
       WHERE h.key = $1 AND h.fencing_token = $2::bigint AND h.session_id = $3 AND h.expires_at > n.now
         AND s.session_id = $3 AND s.token_hash = $4 AND s.expires_at > n.now
         AND ($6::bigint IS NULL OR n.now - h.granted_at < $6::bigint)
       RETURNING h.*)
     SELECT ${HOLD_COLUMNS} FROM renewed h LEFT JOIN holdfast_locks a ON a.key = h.key`,
    [req.key, req.fencingToken, req.session.sessionId, req.session.tokenHash, req.ttlMillis ?? null, req.maxHoldMillis ?? null, req.value ?? null],
  );
  return rows[0] ? toLock(rows[0]) : null;
}

/** The session's live hold (key, token), for a renew refused for its age. */
export async function liveHold(db: Queryable, key: string, fencingToken: FencingToken, sessionId: string): Promise<HeldLock | null> {
  const rows = await db.query(
    `SELECT ${HOLD_COLUMNS} FROM holdfast_holds h LEFT JOIN holdfast_locks a ON a.key = h.key
     WHERE h.key = $1 AND h.fencing_token = $2::bigint AND h.session_id = $3 AND ${LIVE_LOCK('h')}`,
    [key, fencingToken, sessionId],
  );
  return rows[0] ? toLock(rows[0]) : null;
}

/** Every live grant of the given keys, mutex rows and holds alike, by key then token. */
export async function liveGrantsOf(db: Queryable, keys: readonly string[]): Promise<HeldLock[]> {
  if (keys.length === 0) return [];
  const rows = await db.query(
    `SELECT l.key, l.session_id, l.owner, l.fencing_token::text AS fencing_token, l.ttl_millis, l.granted_at, l.expires_at, l.value,
            NULL::text AS mode, NULL::integer AS holder_limit, l.fencing_token AS token_order
     FROM holdfast_locks l WHERE l.key = ANY($1::text[]) AND l.mode IS NULL AND ${LIVE_LOCK('l')}
     UNION ALL
     SELECT ${HOLD_COLUMNS}, h.fencing_token AS token_order
     FROM holdfast_locks a JOIN holdfast_holds h ON h.key = a.key
     WHERE a.key = ANY($1::text[]) AND a.mode IS NOT NULL AND ${LIVE_LOCK('h')}
     ORDER BY key, token_order`,
    [keys],
  );
  return rows.map(toLock);
}

/**
 * Describes each key by its lowest-token live grant, with `holders` (every live grant by token)
 * when the key admits more than one (spi.ts "Multi-holder keys"); keys in the order given.
 */
export function describeKeys(keys: readonly string[], grants: readonly HeldLock[], anchors: ReadonlySet<string>): HeldLock[] {
  const byKey = new Map<string, HeldLock[]>();
  for (const grant of grants) {
    const list = byKey.get(grant.key);
    if (list) list.push(grant);
    else byKey.set(grant.key, [grant]);
  }
  const described: HeldLock[] = [];
  for (const key of keys) {
    const live = byKey.get(key);
    if (!live || live.length === 0) continue;
    described.push(anchors.has(key) ? { ...live[0]!, holders: live } : live[0]!);
  }
  return described;
}

/** The key's live holds (its anchor row locked by the caller), lowest token first, each with the instant read. */
export async function liveHoldsForUpdate(tx: Queryable, key: string): Promise<EndedLock[]> {
  const rows = await tx.query(
    `SELECT ${HOLD_COLUMNS}, ${DB_NOW} AS ended_at FROM holdfast_holds h JOIN holdfast_locks a ON a.key = h.key
     WHERE h.key = $1 AND ${LIVE_LOCK('h')} ORDER BY h.fencing_token`,
    [key],
  );
  return rows.map(toEndedLock);
}

/** Ends one hold (a forced revoke), its anchor locked by the caller; the anchor goes when no hold is left. */
export async function deleteHold(tx: Queryable, key: string, sessionId: string): Promise<void> {
  await tx.query(
    `WITH gone AS (DELETE FROM holdfast_holds WHERE key = $1 AND session_id = $2 RETURNING key, session_id),
     emptied AS (${EMPTIED_ANCHORS('gone', 'gone')})
     SELECT 1`,
    [key, sessionId],
  );
}

/** Sweeper: deletes up to `limit` lapsed holds (oldest expiry first, skipping locked ones), and anchors they leave empty. */
export async function expireHolds(db: Queryable, limit: number): Promise<EndedLock[]> {
  const rows = await db.query(
    `WITH n AS (SELECT holdfast_now_ms() AS now),
     gone AS (DELETE FROM holdfast_holds h WHERE (h.key, h.session_id) IN (
         SELECT x.key, x.session_id FROM holdfast_holds x WHERE x.expires_at <= (SELECT now FROM n)
         ORDER BY x.expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING h.*),
     emptied AS (DELETE FROM holdfast_locks l WHERE l.key = ANY(ARRAY(
         SELECT e.key FROM holdfast_locks e WHERE e.key IN (SELECT key FROM gone) AND e.mode IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM holdfast_holds o WHERE o.key = e.key
                           AND NOT EXISTS (SELECT 1 FROM gone g WHERE g.key = o.key AND g.session_id = o.session_id))
         FOR UPDATE SKIP LOCKED)))
     SELECT ${HOLD_COLUMNS}, (SELECT now FROM n) AS ended_at FROM gone h LEFT JOIN holdfast_locks a ON a.key = h.key`,
    [limit],
  );
  return rows.map(toEndedLock);
}
