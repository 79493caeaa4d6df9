/**
 * The audit trail in SQL: the SPI's reads, and the append that runs inside the transaction of
 * the change it audits (the audit head's row lock comes last in the store's order, sql-store.ts).
 * Every append re-seals the head (last id and hash, and the prune checkpoint) with the audit key
 * (lock/audit/chain.ts); a prune deletes the oldest entries and moves the checkpoint in one
 * transaction with its own audit entry.
 */
import type { AuditEntry, BackendName, FencingToken, Page } from '../../../contract/records.js';
import type { AuditSealer } from '../../audit/chain.js';
import type { AuditDraft, AuditHead, AuditQuery, PruneAuditResult } from '../spi.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import type { Queryable, Row, SqlDatabase } from './queryable.js';
import { guardSql } from './sql-errors.js';
import { AUDIT_COLUMNS, DB_NOW, toAudit } from './sql-rows.js';

const HEAD_COLUMNS = 'last_id::text AS last_id, last_hash, checkpoint_id::text AS checkpoint_id, checkpoint_hash, key_id, seal';

function toHead(r: Row): AuditHead {
  return {
    lastId: String(r.last_id),
    lastHash: String(r.last_hash),
    checkpointId: String(r.checkpoint_id),
    checkpointHash: String(r.checkpoint_hash),
    ...(r.key_id !== null && r.key_id !== undefined ? { keyId: String(r.key_id) } : {}),
    seal: r.seal === null || r.seal === undefined ? null : String(r.seal),
  };
}

export class SqlAudit {
  constructor(
    private readonly db: SqlDatabase,
    private readonly backend: BackendName,
    private readonly sealer: AuditSealer,
  ) {}

  async listAudit(query: AuditQuery): Promise<Page<AuditEntry>> {
    const before = decodeCursor(query.cursor, /^[1-9][0-9]{0,17}$/);
    const rows = await this.guard(() =>
      this.db.query(
        `SELECT ${AUDIT_COLUMNS} FROM holdfast_audit
         WHERE ($1::bigint IS NULL OR id < $1::bigint)
           AND ($3::text IS NULL OR actor = $3) AND ($4::text IS NULL OR action = $4) AND ($5::text IS NULL OR target = $5)
         -- The table's bigint id: a bare "id" here would be the text alias AUDIT_COLUMNS selects ("10" < "9").
         ORDER BY holdfast_audit.id DESC LIMIT $2`,
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
        this.db.query(`SELECT ${AUDIT_COLUMNS} FROM holdfast_audit WHERE id > $1 ORDER BY holdfast_audit.id LIMIT 500`, [after]),
      );
      for (const row of rows) yield toAudit(row);
      if (rows.length < 500) return;
      after = Number(rows.at(-1)!.id);
    }
  }

  async readAuditHead(): Promise<AuditHead> {
    const rows = await this.guard(() => this.db.query(`SELECT ${HEAD_COLUMNS} FROM holdfast_audit_head`));
    return toHead(rows[0]!);
  }

  async pruneAudit(req: { before: number; audit: AuditDraft }): Promise<PruneAuditResult> {
    return this.guard(() =>
      this.db.transaction(async (tx) => {
        // The head first: appends and other prunes wait here, so the run found below stays the oldest.
        const head = toHead((await tx.query(`SELECT ${HEAD_COLUMNS} FROM holdfast_audit_head FOR UPDATE`))[0]!);
        const last = (
          await tx.query(
            `SELECT id::text AS id, hash FROM holdfast_audit
             WHERE id > $1::bigint AND id < coalesce((SELECT min(id) FROM holdfast_audit WHERE at >= $2), $3::bigint + 1)
             ORDER BY holdfast_audit.id DESC LIMIT 1`,
            [head.checkpointId, req.before, head.lastId],
          )
        )[0];
        let pruned = 0;
        if (last) {
          const deleted = await tx.query(`DELETE FROM holdfast_audit WHERE id <= $1::bigint RETURNING 1`, [last.id]);
          pruned = deleted.length;
          await tx.query('UPDATE holdfast_audit_head SET checkpoint_id = $1::bigint, checkpoint_hash = $2', [last.id, last.hash]);
        }
        const audit = await this.append(tx, { ...req.audit, action: 'audit.prune', target: 'audit', outcome: pruned > 0 ? 'PRUNED' : 'NOTHING_PRUNED' });
        const checkpoint = last ? { id: String(last.id), hash: String(last.hash) } : { id: head.checkpointId, hash: head.checkpointHash };
        return { pruned, checkpoint, audit };
      }),
    );
  }

  /** Seals and appends an entry inside `tx`, the transaction of the change it audits; its head row lock is taken last. */
  async append(
    tx: Queryable,
    draft: AuditDraft & Pick<AuditEntry, 'action' | 'target' | 'outcome'> & { fencingToken?: FencingToken | undefined },
  ): Promise<AuditEntry> {
    const row = (await tx.query(`SELECT ${HEAD_COLUMNS}, ${DB_NOW} AS now FROM holdfast_audit_head FOR UPDATE`))[0]!;
    const head = toHead(row);
    const entry = this.sealer.seal(head.lastHash, {
      id: String(BigInt(head.lastId) + 1n),
      at: Number(row.now),
      actor: draft.actor,
      ...(draft.actorScope !== undefined ? { actorScope: [...draft.actorScope] } : {}),
      action: draft.action,
      target: draft.target,
      ...(draft.fencingToken !== undefined ? { fencingToken: draft.fencingToken } : {}),
      reason: draft.reason,
      outcome: draft.outcome,
      requestId: draft.requestId,
    });
    await tx.query(
      `INSERT INTO holdfast_audit (id, at, actor, action, target, fencing_token, reason, outcome, request_id, prev_hash, hash, key_id, actor_scope)
       VALUES ($1::bigint, $2, $3, $4, $5, $6::bigint, $7, $8, $9, $10, $11, $12, $13::text[])`,
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
        entry.keyId ?? null,
        entry.actorScope ?? null,
      ],
    );
    const sealed = this.sealer.sealHead({ ...head, lastId: entry.id, lastHash: entry.hash });
    await tx.query('UPDATE holdfast_audit_head SET last_id = $1::bigint, last_hash = $2, key_id = $3, seal = $4', [
      entry.id,
      entry.hash,
      sealed.keyId ?? null,
      sealed.seal,
    ]);
    return entry;
  }

  /** Maps "cannot take writes" failures to NOT_LEADER (sql-errors.ts). */
  private guard<T>(operation: () => Promise<T>): Promise<T> {
    return guardSql(this.backend, operation);
  }
}
