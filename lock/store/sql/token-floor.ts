/**
 * The SQL store's token floor (issue 25; the rules are on TokenFloor in lock/store/spi.ts): the
 * identity of where the data lives, recorded in holdfast_token_floor (migration 9), and the
 * advance that raises holdfast_fencing_seq to the store clock in microseconds.
 *
 * setval is not transactional: an advance whose transaction fails later leaves the sequence
 * raised, which only makes tokens jump further — never back.
 */
import type { BackendName, FencingToken } from '../../../contract/records.js';
import type { AuditDraft, StoreIdentityCheck, TokenAdvanceResult, TokenFloor } from '../spi.js';
import type { Queryable, SqlDatabase } from './queryable.js';
import type { SqlAudit } from './sql-audit.js';
import { guardSql } from './sql-errors.js';
import { DB_NOW } from './sql-rows.js';

/** Where a database lives: the cluster's system identifier (new for every initdb) and the database's oid (new for every CREATE DATABASE). */
export function databaseIdentity(db: Queryable): () => Promise<string> {
  return async () => {
    const [row] = await db.query<{ system: string; database: string }>(
      `SELECT s.system_identifier::text AS system, d.oid::text AS database
       FROM pg_control_system() s, pg_database d WHERE d.datname = current_database()`,
    );
    return `postgres:${row!.system}/${row!.database}`;
  };
}

export class SqlTokenFloor implements TokenFloor {
  constructor(
    private readonly db: SqlDatabase,
    private readonly backend: BackendName,
    private readonly audit: SqlAudit,
    /** Where the store lives now (databaseIdentity, or the embedded data dir's store id). */
    private readonly identity: () => Promise<string>,
    /**
     * Only one process opens this store at a time (embedded): every check that finds it current
     * raises the floor too, so a store put back whole with its identity (a copied data directory)
     * still never issues a token again. A shared store cannot: its instances start while others serve.
     */
    private readonly raiseWhenCurrent = false,
  ) {}

  async check(): Promise<StoreIdentityCheck> {
    const live = await guardSql(this.backend, this.identity);
    return guardSql(this.backend, () =>
      this.db.transaction(async (tx) => {
        const recorded = await recordedIdentity(tx);
        if (recorded !== null && recorded === live && this.raiseWhenCurrent) {
          const sequence = await readSequence(tx);
          if (sequence.drawn) await tx.query('UPDATE holdfast_token_floor SET advanced_to = $1::bigint', [await raiseFloor(tx, sequence)]);
        }
        if (recorded !== null) return { state: recorded === live ? 'current' : 'restored', recorded, live };
        // Never recorded: a new store, or one from before this release (whose backup may be older
        // than its sequence: a sequence that has drawn tokens is advanced as it is claimed).
        const claimed = await tx.query(
          `INSERT INTO holdfast_token_floor (identity, advanced_at) VALUES ($1, ${DB_NOW})
           ON CONFLICT (singleton) DO NOTHING RETURNING identity`,
          [live],
        );
        if (claimed.length === 0) {
          const other = (await recordedIdentity(tx))!;
          return { state: other === live ? 'current' : 'restored', recorded: other, live };
        }
        const sequence = await readSequence(tx);
        if (sequence.drawn) await tx.query('UPDATE holdfast_token_floor SET advanced_to = $1::bigint', [await raiseFloor(tx, sequence)]);
        return { state: 'current', recorded: live, live };
      }),
    );
  }

  async advance(req: { audit: AuditDraft }): Promise<TokenAdvanceResult> {
    const live = await guardSql(this.backend, this.identity);
    return guardSql(this.backend, () =>
      this.db.transaction(async (tx) => {
        // The floor row first, then the audit head (the store's row-lock order ends with the head).
        await tx.query('SELECT identity FROM holdfast_token_floor FOR UPDATE');
        const sequence = await readSequence(tx);
        const floor = await raiseFloor(tx, sequence);
        await tx.query(
          `INSERT INTO holdfast_token_floor (identity, advanced_to, advanced_at) VALUES ($1, $2::bigint, ${DB_NOW})
           ON CONFLICT (singleton) DO UPDATE SET identity = EXCLUDED.identity, advanced_to = EXCLUDED.advanced_to, advanced_at = EXCLUDED.advanced_at`,
          [live, floor],
        );
        const audit = await this.audit.append(tx, { ...req.audit, action: 'tokens.advance', target: 'tokens', outcome: 'ADVANCED', fencingToken: floor });
        return { previous: sequence.previous, floor, identity: live, audit };
      }),
    );
  }
}

async function recordedIdentity(tx: Queryable): Promise<string | null> {
  const [row] = await tx.query<{ identity: string }>('SELECT identity FROM holdfast_token_floor');
  return row ? row.identity : null;
}

interface SequenceReading {
  /** The highest token drawn so far ('0' when none). */
  previous: FencingToken;
  drawn: boolean;
  /** The store clock, in microseconds since the epoch. */
  clockMicros: bigint;
}

async function readSequence(tx: Queryable): Promise<SequenceReading> {
  const [row] = await tx.query<{ last_value: string; is_called: boolean; clock_us: string }>(
    `SELECT last_value::text AS last_value, is_called, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint::text AS clock_us
     FROM holdfast_fencing_seq`,
  );
  return { previous: row!.is_called ? row!.last_value : '0', drawn: row!.is_called, clockMicros: BigInt(row!.clock_us) };
}

/** Raises the sequence to the clock reading when that is higher; answers the floor every later token is above. */
async function raiseFloor(tx: Queryable, sequence: SequenceReading): Promise<FencingToken> {
  if (sequence.clockMicros <= BigInt(sequence.previous)) return sequence.previous;
  // is_called true: the next nextval answers floor + 1.
  await tx.query(`SELECT setval('holdfast_fencing_seq', $1::bigint, true)`, [sequence.clockMicros.toString()]);
  return sequence.clockMicros.toString();
}
