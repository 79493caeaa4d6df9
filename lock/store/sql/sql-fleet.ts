/**
 * The SQL side of one service across instances (migration 3): the instance registry,
 * the fleet-wide wait state, deadlock verdicts, and the release feed (LISTEN on the
 * channel the holdfast_locks trigger notifies). The same SQL on PostgreSQL and PGlite.
 *
 * Lock order: waiter rows are locked after session or instance rows (by the cascades), alone
 * (endWait, verdict marks), or after lock rows only with SKIP LOCKED (a release's heirs and the
 * handed records it ends, the sweep's handed records; sql-grants.ts); a try that records a wait
 * (migration 11) inserts a new row after its lock rows. So these writes add no cycle to the store's.
 */
import type { DeadlockVerdict, FleetWaitState, HandedGrant, HeldLock, InstancePublication, ReleaseFeed, ReleaseFeedListener, WaitEdge } from '../spi.js';
import { LIVE_LOCK, QUALIFIED_LOCK_COLUMNS, toLock } from './sql-rows.js';
import type { Row, SqlDatabase } from './queryable.js';
import { StatementBatcher } from '../statement-batcher.js';
import { MUTEX, type LockMode } from '../../../contract/records.js';
import { multiHolderKindOf } from '../../../contract/wire-rules.js';

interface WaitRecord {
  waitId: string;
  sessionId: string;
  key: string;
  instanceId: string;
  ttlMillis?: number;
  deadlineMillis?: number;
  value?: string;
  mode?: LockMode;
}

export const RELEASED_CHANNEL = 'holdfast_released';
/** Key of the advisory lock under which one instance at a time looks for cycles. */
const DEADLOCK_CHECK_LOCK = 7070711;

const NOW = '(SELECT holdfast_now_ms())';
/** Recorded waits of live instances and live sessions, not yet handed their key (a handed wait waits no more). */
const LIVE_WAIT = (w: string, now: string) =>
  `${w}.granted_token IS NULL
   AND EXISTS (SELECT 1 FROM holdfast_instances i WHERE i.instance_id = ${w}.instance_id AND i.expires_at > ${now})
   AND EXISTS (SELECT 1 FROM holdfast_sessions s WHERE s.session_id = ${w}.session_id AND s.expires_at > ${now})`;

/** Live waits with a live holder of their mutex key: what deadlocks are decided on. */
const MUTEX_EDGES = (onlyUnresolved: boolean) => `
  SELECT w.wait_id, w.session_id, w.key, w.instance_id, w.started_at, w.victim_cycle IS NOT NULL AS victim,
         l.session_id AS holder_session_id, l.owner AS holder_owner, NULL::text AS mode, NULL::integer AS holder_limit
  FROM holdfast_waiters w CROSS JOIN n
  JOIN holdfast_locks l ON l.key = w.key
  WHERE ${LIVE_WAIT('w', 'n.now')}
    AND l.session_id <> w.session_id AND l.expires_at > n.now
    AND EXISTS (SELECT 1 FROM holdfast_sessions hs WHERE hs.session_id = l.session_id AND hs.expires_at > n.now)
    ${onlyUnresolved ? 'AND w.victim_cycle IS NULL' : ''}`;

/** Live waits on a key that admits several holders: an edge to each of its live grants (the operator's view only). */
const HOLD_EDGES = `
  SELECT w.wait_id, w.session_id, w.key, w.instance_id, w.started_at, w.victim_cycle IS NOT NULL AS victim,
         h.session_id AS holder_session_id, h.owner AS holder_owner, a.mode, a.holder_limit
  FROM holdfast_waiters w CROSS JOIN n
  JOIN holdfast_locks a ON a.key = w.key AND a.mode IS NOT NULL
  JOIN holdfast_holds h ON h.key = w.key
  WHERE ${LIVE_WAIT('w', 'n.now')}
    AND h.session_id <> w.session_id AND h.expires_at > n.now
    AND EXISTS (SELECT 1 FROM holdfast_sessions hs WHERE hs.session_id = h.session_id AND hs.expires_at > n.now)`;

const DEADLOCK_EDGES = `WITH n AS (SELECT holdfast_now_ms() AS now) ${MUTEX_EDGES(true)} ORDER BY started_at, wait_id LIMIT $1`;

const OPERATOR_EDGES = `
  WITH n AS (SELECT holdfast_now_ms() AS now),
  e AS (${MUTEX_EDGES(false)} UNION ALL ${HOLD_EDGES})
  SELECT e.*, (SELECT ws.owner FROM holdfast_sessions ws WHERE ws.session_id = e.session_id) AS owner
  FROM e ORDER BY e.started_at, e.wait_id, e.holder_session_id
  LIMIT $1`;

export class SqlFleet implements FleetWaitState, ReleaseFeed {
  readonly handsOff = true;
  readonly recordsOnTry = true;

  constructor(private readonly db: SqlDatabase) {}

  async heartbeatInstance(req: { instanceId: string; ttlMillis: number; published?: unknown }): Promise<{ liveInstances: number; joined: boolean }> {
    const rows = await this.db.query(
      `WITH n AS (SELECT holdfast_now_ms() AS now)
       INSERT INTO holdfast_instances AS i (instance_id, started_at, heartbeat_at, expires_at, published)
       SELECT $1, n.now, n.now, n.now + $2::integer, $3::jsonb FROM n
       ON CONFLICT (instance_id) DO UPDATE
         SET heartbeat_at = EXCLUDED.heartbeat_at, expires_at = EXCLUDED.expires_at, published = EXCLUDED.published
       RETURNING (i.xmax = 0) AS joined,
         (SELECT count(*) FROM holdfast_instances o, n WHERE o.expires_at > n.now AND o.instance_id <> $1)::int + 1 AS live`,
      [req.instanceId, req.ttlMillis, req.published === undefined ? null : JSON.stringify(req.published)],
    );
    return { liveInstances: Number(rows[0]!.live), joined: rows[0]!.joined === true };
  }

  async leaveFleet(instanceId: string): Promise<void> {
    await this.db.query('DELETE FROM holdfast_instances WHERE instance_id = $1', [instanceId]);
  }

  async expireInstances(limit: number): Promise<number> {
    const rows = await this.db.query(
      `DELETE FROM holdfast_instances WHERE instance_id IN (
         SELECT instance_id FROM holdfast_instances WHERE expires_at <= ${NOW}
         ORDER BY instance_id LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING instance_id`,
      [limit],
    );
    return rows.length;
  }

  async instancePublications(): Promise<InstancePublication[]> {
    const rows = await this.db.query(
      `SELECT instance_id, published FROM holdfast_instances WHERE expires_at > ${NOW} AND published IS NOT NULL ORDER BY instance_id`,
    );
    return rows.map((r) => ({ instanceId: String(r.instance_id), published: r.published }));
  }

  /**
   * Waits begin and end in bursts under contention (every waiter of a hot key records itself):
   * the calls of one event-loop turn share one statement, at most two in flight (group commit).
   */
  private readonly begins = new StatementBatcher((batch: WaitRecord[]) => this.beginWaitBatch(batch), 256, 2);
  private readonly ends = new StatementBatcher((batch: string[]) => this.endWaitBatch(batch), 256, 2);

  beginWait(req: WaitRecord): Promise<void> {
    return this.begins.submit(req);
  }

  private async beginWaitBatch(batch: WaitRecord[]): Promise<void[]> {
    try {
      await this.insertWaits(batch);
    } catch (error) {
      // 23503: a session or instance ended between the check and the insert. The wait's next
      // try answers SESSION_NOT_FOUND; an instance that lapsed records its waits again on rejoin.
      if ((error as { code?: string }).code !== '23503') throw error;
      // In a batch, that one row failed the others too: each goes again alone.
      if (batch.length > 1) await Promise.all(batch.map((req) => this.begins.submitAlone(req)));
    }
    return batch.map(() => undefined);
  }

  /**
   * Rows in session order: their foreign-key checks share-lock the session rows in the
   * order a multi-session end locks them, so a batch adds no lock cycle.
   */
  private insertWaits(batch: readonly WaitRecord[]): Promise<Row[]> {
    return this.db.query(
      `INSERT INTO holdfast_waiters (wait_id, session_id, key, instance_id, started_at, ttl_millis, deadline_at, value, mode)
       SELECT r.wid, r.sid, r.k, r.iid, holdfast_now_ms(), r.ttl, holdfast_now_ms() + r.budget, r.v, r.m
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::integer[], $6::bigint[], $7::text[], $8::text[])
         AS r(wid, sid, k, iid, ttl, budget, v, m)
       WHERE EXISTS (SELECT 1 FROM holdfast_sessions s WHERE s.session_id = r.sid)
         AND EXISTS (SELECT 1 FROM holdfast_instances i WHERE i.instance_id = r.iid)
       ORDER BY r.sid, r.wid
       ON CONFLICT (wait_id) DO NOTHING`,
      [
        batch.map((r) => r.waitId),
        batch.map((r) => r.sessionId),
        batch.map((r) => r.key),
        batch.map((r) => r.instanceId),
        batch.map((r) => r.ttlMillis ?? null),
        batch.map((r) => (r.deadlineMillis === undefined ? null : Math.max(0, Math.floor(r.deadlineMillis)))),
        batch.map((r) => r.value ?? null),
        // NULL: exclusive (migration 13); a shared wait does not keep new shared grants out.
        batch.map((r) => (r.mode === 'shared' ? 'shared' : null)),
      ],
    );
  }

  endWait(waitId: string): Promise<HeldLock | null> {
    return this.ends.submit(waitId);
  }

  /**
   * Waiter rows locked in session order, as a session end's cascade locks them: no lock cycle.
   * A wait a release handed its key answers that grant while it is still live and its own.
   */
  private async endWaitBatch(waitIds: string[]): Promise<(HeldLock | null)[]> {
    const rows = await this.db.query(
      `WITH gone AS (
         DELETE FROM holdfast_waiters WHERE wait_id IN (
           SELECT wait_id FROM holdfast_waiters WHERE wait_id = ANY($1::text[]) ORDER BY session_id, wait_id FOR UPDATE)
         RETURNING wait_id, key, session_id, granted_token)
       SELECT gone.wait_id, ${QUALIFIED_LOCK_COLUMNS}
       FROM gone JOIN holdfast_locks l
         ON l.key = gone.key AND l.fencing_token = gone.granted_token AND l.session_id = gone.session_id
       WHERE ${LIVE_LOCK('l')}`,
      [waitIds],
    );
    const handed = new Map(rows.map((row) => [String(row.wait_id), toLock(row)]));
    return waitIds.map((waitId) => handed.get(waitId) ?? null);
  }

  async waiterCounts(keys: readonly string[]): Promise<Map<string, number>> {
    if (keys.length === 0) return new Map();
    const rows = await this.db.query(
      `WITH n AS (SELECT holdfast_now_ms() AS now)
       SELECT w.key, count(*)::int AS waiters FROM holdfast_waiters w CROSS JOIN n
       WHERE w.key = ANY($1::text[]) AND ${LIVE_WAIT('w', 'n.now')}
       GROUP BY w.key`,
      [keys],
    );
    return new Map(rows.map((r) => [String(r.key), Number(r.waiters)]));
  }

  async totalWaiters(): Promise<number> {
    const rows = await this.db.query(
      `WITH n AS (SELECT holdfast_now_ms() AS now)
       SELECT count(*)::int AS waiters FROM holdfast_waiters w CROSS JOIN n WHERE ${LIVE_WAIT('w', 'n.now')}`,
    );
    return Number(rows[0]!.waiters);
  }

  async waitForEdges(limit: number): Promise<WaitEdge[]> {
    return (await this.db.query(OPERATOR_EDGES, [limit])).map(toEdge);
  }

  async resolveDeadlocks(limit: number, decide: (edges: readonly WaitEdge[]) => DeadlockVerdict[]): Promise<DeadlockVerdict[] | null> {
    return this.db.transaction(async (tx) => {
      // One checker at a time fleet-wide, and a checker never waits: the others skip this round.
      const got = await tx.query('SELECT pg_try_advisory_xact_lock($1) AS got', [DEADLOCK_CHECK_LOCK]);
      if (got[0]!.got !== true) return null;
      // Waits already chosen are left out: their cycle is broken once they answer.
      const edges = (await tx.query(DEADLOCK_EDGES, [limit])).map(toEdge);
      const verdicts = decide(edges);
      if (verdicts.length > 0) {
        await tx.query(
          `UPDATE holdfast_waiters w SET victim_cycle = v.cycle
           FROM (SELECT * FROM unnest($1::text[], $2::jsonb[]) AS v(wait_id, cycle)) v
           WHERE w.wait_id = v.wait_id AND w.victim_cycle IS NULL AND w.granted_token IS NULL`,
          [verdicts.map((v) => v.waitId), verdicts.map((v) => JSON.stringify({ sessions: v.sessions, keys: v.keys }))],
        );
      }
      return verdicts;
    });
  }

  async deadlockVictims(instanceId: string): Promise<DeadlockVerdict[]> {
    const rows = await this.db.query(
      'SELECT wait_id, victim_cycle FROM holdfast_waiters WHERE instance_id = $1 AND victim_cycle IS NOT NULL',
      [instanceId],
    );
    return rows.map((r) => {
      const cycle = r.victim_cycle as { sessions: string[]; keys: string[] };
      return { waitId: String(r.wait_id), sessions: cycle.sessions, keys: cycle.keys };
    });
  }

  async subscribeReleases(listener: ReleaseFeedListener): Promise<() => void> {
    if (!this.db.listen) {
      listener.health(false, 'this database connection cannot LISTEN');
      return () => {};
    }
    const stop = await this.db.listen(RELEASED_CHANNEL, {
      notify: (payload) => {
        // holdfast_release_batch sends each handoff alone, marked by a leading U+0001 (keys hold no control characters).
        if (payload.startsWith(HANDOFF_MARK)) listener.handedOff([toHandedGrant(JSON.parse(payload.slice(1)) as Record<string, unknown>)]);
        else listener.released(payload.split('\n'));
      },
      health: (up, cause) => listener.health(up, cause),
    });
    return () => void stop().catch(() => {});
  }
}

const HANDOFF_MARK = '\u0001';

function toHandedGrant(r: Record<string, unknown>): HandedGrant {
  return {
    waitId: String(r.waitId),
    key: String(r.key),
    sessionId: String(r.sessionId),
    owner: String(r.owner),
    fencingToken: String(r.fencingToken),
    ttlMillis: Number(r.ttlMillis),
    grantedAt: Number(r.grantedAt),
    expiresAt: Number(r.expiresAt),
    // The payload carries no value: the wait that parks knows its own (core answers with it).
    ...MUTEX,
  };
}

/** The edge's mark when its key admits several holders (its anchor's mode and limit). */
function holderKindOf(r: Row): Pick<WaitEdge, 'holderKind'> {
  if (r.mode === null || r.mode === undefined) return {};
  const holderKind = multiHolderKindOf({ mode: String(r.mode), limit: Number(r.holder_limit) });
  return holderKind ? { holderKind } : {};
}

function toEdge(r: Row): WaitEdge {
  return {
    waitId: String(r.wait_id),
    sessionId: String(r.session_id),
    key: String(r.key),
    holderSessionId: String(r.holder_session_id),
    instanceId: String(r.instance_id),
    startedAt: Number(r.started_at),
    victim: r.victim === true,
    ...(r.owner !== null && r.owner !== undefined ? { owner: String(r.owner) } : {}),
    ...(r.holder_owner !== null && r.holder_owner !== undefined ? { holderOwner: String(r.holder_owner) } : {}),
    ...holderKindOf(r),
  };
}
