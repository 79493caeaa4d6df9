/**
 * The audit trail in SQL: the SPI's reads, and the append that runs inside the transaction of
 * the change it audits (the audit head's row lock comes last in the store's order, sql-store.ts).
 */
import type { AuditEntry, BackendName, FencingToken, Page } from '../../../contract/records.js';
import type { AuditSealer } from '../../audit/chain.js';
import type { AuditDraft, AuditHead, AuditQuery } from '../spi.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import type { Queryable, SqlDatabase } from './queryable.js';
import { guardSql } from './sql-errors.js';
import { AUDIT_COLUMNS, DB_NOW, toAudit } from './sql-rows.js';

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

  /** Seals and appends an entry inside `tx`, the transaction of the change it audits; its head row lock is taken last. */
  async append(
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
