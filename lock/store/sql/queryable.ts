/**
 * The small query interface both `pg` and PGlite satisfy, so there is one SQL
 * store and not two. Row values: int8 columns arrive as JS numbers (epoch ms
 * fit in 2^53); fencing tokens are selected `::text` so they stay exact.
 */
export type Row = Record<string, unknown>;

export interface Queryable {
  query<R extends Row = Row>(sql: string, params?: readonly unknown[]): Promise<R[]>;
}

export interface SqlDatabase extends Queryable {
  /** Runs `work` in one transaction; rolls back if it throws. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs multi-statement DDL (no parameters). */
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
  /**
   * Delivers NOTIFY payloads of `channel` (after the notifying transaction commits). Resolves
   * once the first attempt to listen has ended; the returned function stops listening.
   */
  listen?(channel: string, handlers: NotificationHandlers): Promise<() => Promise<void>>;
}

export interface NotificationHandlers {
  notify(payload: string): void;
  /** The listening connection was lost (`up` false; it re-listens with backoff) or is listening again. */
  health(up: boolean, cause: string): void;
}
