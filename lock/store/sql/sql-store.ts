/**
 * The SQL lock store: one implementation, one SQL, over any SqlDatabase
 * (PostgreSQL through `pg`, or PGlite in-process for the embedded default).
 *
 * Row-lock order, everywhere: session rows (by session_id), then lock rows
 * (by key), then the audit head. Acquire takes a share lock on its own session
 * row, so a session cannot be ended while a grant to it is being written, and
 * no lock of a dead session survives an end-session transaction.
 *
 * This class is the SPI's face and the database's lifecycle; the work is in its parts:
 * sql-sessions.ts, sql-grants.ts, sql-audit.ts, sql-summary.ts and the fleet (sql-fleet.ts),
 * speaking the shared columns and fragments of sql-rows.ts.
 */
import { createAuditSealer, type AuditSealer } from '../../audit/chain.js';
import { NotLeaderError } from '../../errors.js';
import type { AuditEntry, BackendName, FencingToken, Page, SessionInfo } from '../../../contract/records.js';
import type {
  OpenSessionRequest,
  AuditDraft,
  AuditHead,
  AuditQuery,
  PruneAuditResult,
  CloseSessionResult,
  EndedLock,
  EndedSession,
  ForceRevokeResult,
  HeartbeatResult,
  HeldLock,
  KillSessionResult,
  ListQuery,
  LockStore,
  ReleaseFeed,
  ReleaseResult,
  RenewResult,
  SessionCredential,
  SessionRecord,
  StoreSummary,
  TryAcquireResult,
  AuthenticateResult,
  RenewRequest,
  SummaryQuery,
  TokenFloor,
} from '../spi.js';
import type { AcquireRequest } from './acquire-batch.js';
import type { SqlDatabase } from './queryable.js';
import { migrate } from './schema.js';
import { SqlAudit } from './sql-audit.js';
import { SqlConsoleRecords } from './sql-console-records.js';
import { guardedDatabase, guardSql } from './sql-errors.js';
import { SqlFleet } from './sql-fleet.js';
import { SqlHolderWatch } from './sql-holder-watch.js';
import { SqlGrants } from './sql-grants.js';
import { SqlSessions } from './sql-sessions.js';
import { summarize } from './sql-summary.js';
import { databaseIdentity, SqlTokenFloor } from './token-floor.js';

export interface SqlLockStoreOptions {
  /** Seals audit entries (keyed when HOLDFAST_AUDIT_KEY_FILE is set). */
  sealer?: AuditSealer;
  /** Where the store lives (issue 25, token-floor.ts); default: the database's own identity. */
  identity?: () => Promise<string>;
}

export class SqlLockStore implements LockStore {
  /** The fleet-wide wait state and the release feed (sql-fleet.ts), with the store's error mapping. */
  readonly fleet: SqlFleet;
  /** Releases announced after commit: the fleet's LISTEN on the channel the locks trigger notifies. */
  readonly releaseFeed: ReleaseFeed;
  /** Restores never re-issue a token (token-floor.ts). */
  readonly tokenFloor: TokenFloor;
  /** Sign-in codes and console sessions the console keeps here (sql-console-records.ts). */
  readonly consoleRecords: SqlConsoleRecords;
  /** Holder changes for L8 watches: the holders channel the locks triggers notify (sql-holder-watch.ts). */
  readonly holderWatch: SqlHolderWatch;
  /** Keys that admit several holders (shared mode, semaphores): migration 13, sql-holds.ts. */
  readonly multiHolder = true;
  private readonly audit: SqlAudit;
  private readonly sessions: SqlSessions;
  private readonly grants: SqlGrants;

  constructor(
    private readonly db: SqlDatabase,
    readonly backend: BackendName,
    options: SqlLockStoreOptions = {},
  ) {
    this.audit = new SqlAudit(db, backend, options.sealer ?? createAuditSealer());
    this.sessions = new SqlSessions(db, backend, this.audit);
    this.grants = new SqlGrants(db, backend, this.audit);
    this.fleet = new SqlFleet(guardedDatabase(db, backend));
    this.releaseFeed = this.fleet;
    this.tokenFloor = new SqlTokenFloor(db, backend, this.audit, options.identity ?? databaseIdentity(db), backend === 'embedded');
    this.consoleRecords = new SqlConsoleRecords(db, backend);
    this.holderWatch = new SqlHolderWatch(db);
  }

  async init(): Promise<void> {
    await guardSql(this.backend, () => migrate(this.db));
  }

  async close(): Promise<void> {
    await this.db.close();
  }

  /** Readiness and the health probe: answers only when the database takes writes (a read-only standby does not). */
  async ping(): Promise<void> {
    const [row] = await guardSql(this.backend, () =>
      this.db.query<{ read_only: string }>("SELECT current_setting('transaction_read_only') AS read_only"),
    );
    if (row?.read_only === 'on') throw new NotLeaderError(`the ${this.backend} store is read-only (a standby, or default_transaction_read_only)`);
  }

  // ---- sessions (sql-sessions.ts) -------------------------------------------

  openSession(req: OpenSessionRequest): Promise<SessionRecord> {
    return this.sessions.openSession(req);
  }

  heartbeat(credential: SessionCredential): Promise<HeartbeatResult> {
    return this.sessions.heartbeat(credential);
  }

  authenticateSession(credential: SessionCredential): Promise<AuthenticateResult> {
    return this.sessions.authenticateSession(credential);
  }

  getSession(sessionId: string): Promise<SessionRecord | null> {
    return this.sessions.getSession(sessionId);
  }

  closeSession(credential: SessionCredential): Promise<CloseSessionResult> {
    return this.sessions.closeSession(credential);
  }

  killSession(sessionId: string, audit: AuditDraft): Promise<KillSessionResult> {
    return this.sessions.killSession(sessionId, audit);
  }

  expireSessions(limit: number): Promise<EndedSession[]> {
    return this.sessions.expireSessions(limit);
  }

  listSessions(query: ListQuery): Promise<Page<SessionInfo>> {
    return this.sessions.listSessions(query);
  }

  // ---- locks (sql-grants.ts) ------------------------------------------------

  tryAcquire(req: AcquireRequest): Promise<TryAcquireResult> {
    return this.grants.tryAcquire(req);
  }

  renew(req: RenewRequest): Promise<RenewResult> {
    return this.grants.renew(req);
  }

  release(req: { key: string; session: SessionCredential; fencingToken: FencingToken }): Promise<ReleaseResult> {
    return this.grants.release(req);
  }

  readLock(key: string): Promise<HeldLock | null> {
    return this.grants.readLock(key);
  }

  listLocks(query: ListQuery & { prefix?: string }): Promise<Page<HeldLock>> {
    return this.grants.listLocks(query);
  }

  forceRevoke(req: { key: string; expectedFencingToken?: FencingToken; audit: AuditDraft }): Promise<ForceRevokeResult> {
    return this.grants.forceRevoke(req);
  }

  expireLocks(limit: number): Promise<EndedLock[]> {
    return this.grants.expireLocks(limit);
  }

  // ---- audit (sql-audit.ts), summary (sql-summary.ts) -----------------------

  listAudit(query: AuditQuery): Promise<Page<AuditEntry>> {
    return this.audit.listAudit(query);
  }

  readAuditChain(): AsyncIterable<AuditEntry> {
    return this.audit.readAuditChain();
  }

  readAuditHead(): Promise<AuditHead> {
    return this.audit.readAuditHead();
  }

  pruneAudit(req: { before: number; audit: AuditDraft }): Promise<PruneAuditResult> {
    return this.audit.pruneAudit(req);
  }

  summary(query?: SummaryQuery): Promise<StoreSummary> {
    return summarize(this.db, this.backend, query);
  }
}
