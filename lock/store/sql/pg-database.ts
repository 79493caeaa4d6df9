import pg from 'pg';
import { PgListener } from './pg-listener.js';
import type { NotificationHandlers, Queryable, Row, SqlDatabase } from './queryable.js';

const INT8_OID = 20;
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as 'text');
  },
};

/**
 * Named (prepared) statements: each connection parses and plans a statement text once, not per
 * call — at c=1 that halved PostgreSQL's CPU per acquire+release (bench/results/throughput.md).
 * The store's texts are fixed (values travel as parameters), a few dozen in all; the cap only
 * keeps a text built at run time from growing every connection's statement cache.
 */
const MAX_NAMED_STATEMENTS = 256;
const statementNames = new Map<string, string>();
function statementName(sql: string): string | undefined {
  let name = statementNames.get(sql);
  if (name === undefined && statementNames.size < MAX_NAMED_STATEMENTS) statementNames.set(sql, (name = `holdfast_${statementNames.size}`));
  return name;
}

/** A pooled PostgreSQL connection (`pg`). */
export class PgDatabase implements SqlDatabase {
  private readonly pool: pg.Pool;
  private readonly listeners = new Set<PgListener>();
  private readonly connectionString: string;
  private readonly connectTimeoutMillis: number;

  /**
   * Timeouts make an unreachable or black-holed PostgreSQL an error within bounded time
   * (answered 503 NOT_LEADER) instead of a request that hangs: `connectTimeoutMillis` covers
   * opening a connection and waiting for a pool slot; `statementTimeoutMillis` is set on the
   * server (statement_timeout) and, with a little slack, on the client (a reply that never
   * comes); a client that timed out is discarded, not reused.
   */
  constructor(
    connectionString: string,
    poolSize = 16,
    timeouts: { connectTimeoutMillis?: number; statementTimeoutMillis?: number } = {},
  ) {
    this.connectionString = connectionString;
    this.connectTimeoutMillis = timeouts.connectTimeoutMillis ?? 1500;
    const statement = timeouts.statementTimeoutMillis ?? 1500;
    this.pool = new pg.Pool({
      connectionString,
      max: poolSize,
      types: types as pg.CustomTypesConfig,
      connectionTimeoutMillis: timeouts.connectTimeoutMillis ?? 1500,
      statement_timeout: statement,
      query_timeout: statement + 500,
    });
    // An idle client losing its connection must not crash the server; the next query reports it.
    this.pool.on('error', () => {});
  }

  async query<R extends Row = Row>(sql: string, params: readonly unknown[] = []): Promise<R[]> {
    // Without parameters pg sends a simple query, which may hold several statements: left unnamed.
    const name = params.length > 0 ? statementName(sql) : undefined;
    const result = name
      ? await this.pool.query({ text: sql, values: params as unknown[], name })
      : await this.pool.query(sql, params as unknown[]);
    return result.rows as R[];
  }

  async exec(sql: string): Promise<void> {
    await this.pool.query(sql);
  }

  async transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    // A checked-out client has no pool listener: without its own, a connection dropped mid-
    // transaction (PostgreSQL restarted, network cut) is an unhandled 'error' that kills the
    // process. The failure still reaches the caller through the pending query.
    let connectionError: Error | undefined;
    const onError = (error: Error) => {
      connectionError = error;
    };
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const tx: Queryable = {
        query: async <R extends Row = Row>(sql: string, params: readonly unknown[] = []) =>
          (await client.query(sql, params as unknown[])).rows as R[],
      };
      const result = await work(tx);
      await client.query('COMMIT');
      client.off('error', onError);
      client.release();
      return result;
    } catch (error) {
      // A connection that cannot even roll back is destroyed, not returned to the pool.
      const rollbackFailure = await client.query('ROLLBACK').then(
        () => undefined,
        (rollbackError: Error) => rollbackError,
      );
      client.off('error', onError);
      client.release(rollbackFailure ?? connectionError);
      throw error;
    }
  }

  /** A dedicated connection per channel, outside the pool (see PgListener). */
  async listen(channel: string, handlers: NotificationHandlers): Promise<() => Promise<void>> {
    const listener = new PgListener(this.connectionString, channel, handlers, { connectTimeoutMillis: this.connectTimeoutMillis });
    this.listeners.add(listener);
    await listener.start();
    return async () => {
      this.listeners.delete(listener);
      await listener.close();
    };
  }

  async close(): Promise<void> {
    await Promise.all([...this.listeners].map((l) => l.close()));
    this.listeners.clear();
    await this.pool.end();
  }
}
