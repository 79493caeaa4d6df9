/**
 * Audit retention (issue 25, extending the pinned contract): A4x exports the trail as JSON lines
 * an outsider can re-verify (viewer: it is the trail A4 already shows), A4p prunes its oldest
 * entries behind a sealed checkpoint (operator; audited, as A3 and A6 are). lock/audit/retention.ts
 * has the format and the rules; the store keeps the checkpoint in its sealed head.
 * Both cover every team's entries, so a scoped token (issue 26) is refused: an export would show
 * what its A4 hides, and a prune would delete other teams' history.
 */
import { Readable } from 'node:stream';
import type { EventContext } from '../../contract/lock-events.js';
import { exportAuditTrail, type AuditTrailStore } from '../audit/retention.js';
import type { LockService } from '../core/lock-service.js';
import type { PruneAuditResult } from '../store/spi.js';
import { ForbiddenError } from '../errors.js';
import { auditActorOf, bodyOf, eventContext } from './request-context.js';
import { routeSchemas, type HttpApp } from './schemas.js';

export interface AuditTrailDeps {
  /** The store as the service uses it (health-checked, instrumented, witnessed). */
  store: AuditTrailStore;
  /** Told of every prune after it committed (the server logs `audit_pruned`). */
  pruned?(result: PruneAuditResult, request: { actor: string; reason: string; before: number }, ctx: EventContext): void;
}

export function registerAuditRetentionRoutes(app: HttpApp, service: LockService, trail: AuditTrailDeps | undefined): void {
  const deps = (): AuditTrailDeps => trail ?? { store: service.store };

  app.get('/v1/admin/audit/export', { schema: routeSchemas.exportAudit, config: { role: 'viewer' } }, async (request, reply) => {
    refuseScoped(request.admin?.prefixes, 'export');
    const lines = exportAuditTrail(deps().store)[Symbol.asyncIterator]();
    // The head is read before the answer starts: a store that cannot answer is a 503 with the error body, not a cut stream.
    const first = await lines.next();
    async function* rest(): AsyncIterable<string> {
      if (!first.done) yield `${JSON.stringify(first.value)}\n`;
      for (let next = await lines.next(); !next.done; next = await lines.next()) yield `${JSON.stringify(next.value)}\n`;
    }
    // A stream is sent as it is (no serialiser); the schema's String types the document, not this body.
    return reply.type('application/x-ndjson; charset=utf-8').send(Readable.from(rest()) as unknown as string);
  });

  app.post('/v1/admin/audit/prune', { schema: routeSchemas.pruneAudit, config: { role: 'operator' } }, async (request) => {
    refuseScoped(request.admin?.prefixes, 'prune');
    const body = bodyOf<{ before: number; reason: string }>(request);
    const { name: actor, scope } = auditActorOf(request);
    const ctx = eventContext(request);
    const { store, pruned } = deps();
    const result = await store.pruneAudit({
      before: body.before,
      audit: { actor, ...(scope !== undefined ? { actorScope: scope } : {}), reason: body.reason, requestId: ctx.requestId },
    });
    pruned?.(result, { actor, reason: body.reason, before: body.before }, ctx);
    return { pruned: result.pruned, checkpoint: result.checkpoint, auditId: result.audit.id };
  });
}

function refuseScoped(prefixes: readonly string[] | undefined, what: 'export' | 'prune'): void {
  if (prefixes !== undefined) {
    throw new ForbiddenError(`a token scoped to ${prefixes.map((p) => JSON.stringify(p)).join(', ')} cannot ${what} the audit trail: it covers every team's keys`);
  }
}
