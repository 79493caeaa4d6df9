/**
 * The etcd store: the store SPI on etcd v3 through `etcd3`.
 *
 * - etcd's leases decide every expiry; no server clock does. A session is live
 *   while its liveness key {root}s/{id} exists (it sits on the session's lease;
 *   heartbeat = keep-alive). A lock is live while its liveness key {root}l/{key}
 *   exists (it sits on a lease that lives at least the lock's TTL) AND the
 *   holder session's liveness key exists with the create revision recorded in the
 *   lock. Instants in records are advisory (the answering server's clock, or the
 *   `clock` option), never read to decide anything.
 * - The fencing token is the lock key's create revision (etcd's global revision:
 *   strictly increasing across the cluster, assigned when the granting txn commits)
 *   × 1000 + the grant's slot in that txn: the acquires of one event-loop turn
 *   share one txn (acquire-batcher.ts, grant-tokens.ts).
 * - Beside each leased key sits an unleased record ({root}sr/, {root}lr/), created
 *   and deleted in the same txns, so the sweeper can report what etcd dropped
 *   (session_expired, lock_expired) exactly once: each report is a compare-and-delete.
 * - Every state change is one txn whose compares pin what it was decided on
 *   (create/mod revisions of the session incarnation, the lock, the audit head),
 *   so two server instances racing can never both win. A session-scoped call checks
 *   the token hash of the incarnation whose create revision its txn compares: the
 *   hash never changes within an incarnation, so the check is as good as in-txn.
 * - A write whose connection broke may or may not have been applied; the txn is
 *   retried only through its own compare (which reads back what happened), and
 *   audit appends are checked against the audit head before being redone.
 * - `waitForRelease` is the revision-addressed wait (see shared-release-watch.ts).
 * - The fleet-wide wait state (instance registry, waits, deadlock verdicts) is etcd-fleet.ts.
 * - A key granted shared or with limit > 1 keeps an anchor at its lock key and one key per grant
 *   under it (holders.ts, holder-grants.ts); a mutex key is exactly as above.
 *
 * This class is the SPI's face and the client's lifecycle; the work is in its parts:
 * etcd-sessions.ts, etcd-grants.ts, etcd-audit.ts, etcd-summary.ts, etcd-release-waits.ts,
 * over what they share (etcd-context.ts).
 */
import { createAuditSealer, type AuditSealer } from '../../audit/chain.js';
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
  ReleaseResult,
  ReleaseWaiter,
  RenewResult,
  SessionCredential,
  SessionRecord,
  StoreSummary,
  TryAcquireResult,
  WaitResult,
  AuthenticateResult,
  RenewRequest,
  SummaryQuery,
  AcquireAttempt,
} from '../spi.js';
import { EtcdAudit } from './etcd-audit.js';
import { EtcdConsoleRecords } from './etcd-console-records.js';
import { createEtcdClient, range } from './etcd-client.js';
import { EtcdContext } from './etcd-context.js';
import { EtcdFleet } from './etcd-fleet.js';
import { EtcdHolderWatch } from './etcd-holder-watch.js';
import { EtcdGrants } from './etcd-grants.js';
import { EtcdReleaseWaits, type WaitShape } from './etcd-release-waits.js';
import { EtcdSessions } from './etcd-sessions.js';
import { summarize } from './etcd-summary.js';
import { keyLayout } from './keys.js';
import type { EtcdWaitRequest } from './wait-request.js';

export type { WaitShape } from './etcd-release-waits.js';

export interface EtcdStoreOptions {
  endpoints: string[];
  /** Key prefix of every Holdfast key (default "/holdfast/"). */
  prefix?: string;
  /** Optional sub-root under the prefix, so deployments or test runs can share a cluster. */
  namespace?: string;
  /** How waits are served; "shared" unless a bench compares shapes. */
  waitShape?: WaitShape;
  /** Per-call deadline for unary etcd calls (default 3000 ms). */
  requestTimeoutMs?: number;
  /** Seals audit entries (keyed when the server has an audit key). */
  auditSealer?: AuditSealer;
  /**
   * Epoch-millisecond clock for advisory instants only (grantedAt, expiresAt,
   * audit `at`, ...). Liveness never reads it: tests skew it to prove that.
   */
  clock?: () => number;
  /**
   * Acquires of one event-loop turn share one etcd txn (default true; false sends
   * each alone, for benches that compare the two).
   */
  acquireBatching?: boolean;
}

export class EtcdStore implements LockStore, ReleaseWaiter {
  readonly backend: BackendName = 'etcd';
  /** Shared and limit > 1 grants keep the multi-holder rules (holders.ts, holder-grants.ts). */
  readonly multiHolder = true;
  private readonly ctx: EtcdContext;
  private readonly audit: EtcdAudit;
  private readonly sessions: EtcdSessions;
  private readonly grants: EtcdGrants;
  private readonly waits: EtcdReleaseWaits;
  /** The fleet-wide wait state (etcd-fleet.ts). */
  readonly fleet: EtcdFleet;
  /** Sign-in codes and console sessions the console keeps here (etcd-console-records.ts). */
  readonly consoleRecords: EtcdConsoleRecords;
  /** Holder changes for L8 watches (etcd-holder-watch.ts). */
  readonly holderWatch: EtcdHolderWatch;
  /** Revision-addressed waits (waitForRelease below). */
  readonly releaseWaiter: ReleaseWaiter = { waitForRelease: (req) => this.waitForRelease(req) };

  constructor(private readonly options: EtcdStoreOptions) {
    if (options.endpoints.length === 0) throw new Error('EtcdStore needs at least one endpoint');
    const ctx = new EtcdContext(keyLayout(options.prefix ?? '/holdfast/', options.namespace), options.clock ?? Date.now);
    this.ctx = ctx;
    this.consoleRecords = new EtcdConsoleRecords(ctx);
    this.audit = new EtcdAudit(ctx, options.auditSealer ?? createAuditSealer());
    this.sessions = new EtcdSessions(ctx, this.audit);
    this.waits = new EtcdReleaseWaits(ctx, options.waitShape ?? 'shared');
    this.grants = new EtcdGrants(ctx, this.audit, this.waits, options.acquireBatching ?? true);
    this.holderWatch = new EtcdHolderWatch(() => ctx.etcd(), ctx.keys);
    this.fleet = new EtcdFleet({
      etcd: () => ctx.etcd(),
      keys: ctx.keys,
      write: (attempt) => ctx.write(attempt),
      writeTellingResends: (attempt) => ctx.writeTellingResends(attempt),
      knownSession: (sessionId, fresh) => (fresh ? ctx.readLiveSession(sessionId) : ctx.knownSession(sessionId)),
      keepAlive: (leaseId) => ctx.keepAlives.keepAlive(leaseId),
      clock: () => ctx.clock(),
      recordedWaits: ctx.recordedWaits,
    });
  }

  // ---------------------------------------------------------------- lifecycle

  async init(): Promise<void> {
    if (this.ctx.client) return;
    const client = createEtcdClient({ endpoints: this.options.endpoints, requestTimeoutMs: this.options.requestTimeoutMs });
    this.ctx.client = client;
    try {
      await this.ping();
    } catch (error) {
      this.ctx.client = null;
      client.close();
      throw error;
    }
    await this.waits.start(client);
  }

  async close(): Promise<void> {
    const client = this.ctx.client;
    if (!client) return;
    await this.waits.stop();
    this.ctx.keepAlives.close();
    this.ctx.client = null;
    client.close();
  }

  async ping(): Promise<void> {
    // A linearizable read needs a leader: exactly "can this backend take writes".
    await range(this.ctx.etcd(), { key: this.ctx.keys.auditHead, count_only: true });
  }

  /** The etcd key prefix all of this store's state lives under. */
  get keyRoot(): string {
    return this.ctx.keys.root;
  }

  /** Waits (and per-call etcd watches) open right now; tests assert it returns to 0. */
  openWatchCount(): number {
    return this.waits.openWatchCount();
  }

  // ---------------------------------------------------------------- sessions (etcd-sessions.ts)

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

  killSession(sessionId: string, draft: AuditDraft): Promise<KillSessionResult> {
    return this.sessions.killSession(sessionId, draft);
  }

  expireSessions(limit: number): Promise<EndedSession[]> {
    return this.sessions.expireSessions(limit);
  }

  listSessions(query: ListQuery): Promise<Page<SessionInfo>> {
    return this.sessions.listSessions(query);
  }

  // ---------------------------------------------------------------- locks (etcd-grants.ts)

  async tryAcquire(req: AcquireAttempt): Promise<TryAcquireResult> {
    const result = await this.grants.tryAcquire(req);
    // A new grant sent with a wait id deleted that wait's key in its txn (an `existing` one did not).
    if (req.waitId !== undefined && result.kind === 'granted' && !result.existing) this.fleet.endedByGrant(req.waitId);
    return result;
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

  // ---------------------------------------------------------------- audit, summary, waiting

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
    return summarize(this.ctx, query);
  }

  waitForRelease(req: EtcdWaitRequest): Promise<WaitResult> {
    return this.waits.waitForRelease(req);
  }
}
