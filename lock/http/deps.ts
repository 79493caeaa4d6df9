/**
 * What the HTTP surface is built from. The composition root (server/holdfast-server.ts)
 * supplies each: the core, the tokens, and the observability side behind contract
 * interfaces, so lock/http imports nothing of exporter/.
 */
import type { HttpTelemetry } from '../../contract/http-events.js';
import type { LockPolicy } from '../../contract/policies.js';
import type { AdminTokens } from '../admin-tokens.js';
import type { HttpTimeouts } from '../config.js';
import type { LockService } from '../core/lock-service.js';
import type { AuditTrailDeps } from './audit-retention-routes.js';
import type { RecentActivity } from './summary.js';

/** The token name a live session was opened with (null: no live session of that id). */
export type SessionOpener = (sessionId: string) => Promise<{ openedBy?: string } | null>;

export interface HttpServerDeps {
  service: LockService;
  tokens: AdminTokens;
  /** A6 by a scoped operator decides by who opened the session (lock/http/key-scope.ts). */
  openerOf: SessionOpener;
  /** L4/L5/L6 spans, metrics and activity counts, and the `request_failed` log line. */
  telemetry: HttpTelemetry;
  /** The recent counts A5 reads (written by the telemetry; this side only reads). */
  activity: RecentActivity;
  /** The lock policies in force (HOLDFAST_POLICIES_FILE), for A8; none when absent. */
  policies?: () => readonly LockPolicy[];
  /**
   * Aborted when the server starts draining (its reason a DrainingError): /readyz and new L4s answer
   * 503 at once, waiting acquires end at once; other routes are served until the listener closes.
   */
  shutdownSignal: AbortSignal;
  /** Renders `/metrics` (the exporter owns the format). */
  renderMetrics: (accept: string | undefined) => Promise<{ contentType: string; body: string }>;
  /** Audit export and prune (A4x, A4p); the service's store when absent. */
  auditTrail?: AuditTrailDeps;
  /** Request, header and idle timeouts; lock/config.ts's defaults when absent. */
  timeouts?: HttpTimeouts;
}
