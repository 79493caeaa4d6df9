/**
 * Audit retention (issue 25, extending the pinned contract): A4x exports the trail as JSON lines
 * an outsider can re-verify (viewer: it is the trail A4 already shows), A4p prunes its oldest
 * entries behind a sealed checkpoint (operator; audited, as A3 and A6 are). lock/audit/retention.ts
 * has the format and the rules; the store keeps the checkpoint in its sealed head.
 */
import { Readable } from 'node:stream';
import type { EventContext } from '../../contract/lock-events.js';
import { exportAuditTrail, type AuditTrailStore } from '../audit/retention.js';
import type { LockService } from '../core/lock-service.js';
import type { PruneAuditResult } from '../store/spi.js';
import { bodyOf, eventContext } from './request-context.js';
import { routeSchemas, type HttpApp } from './schemas.js';

export interface AuditTrailDeps {
  /** The store as the service uses it (health-checked, instrumented, witnessed). */
  store: AuditTrailStore;
  /** Told of every prune after it committed (the server logs `audit_pruned`). */
  pruned?(result: PruneAuditResult, request: { actor: string; reason: string; before: number }, ctx: EventContext): void;
}

export function registerAuditRetentionRoutes(app: HttpApp, service: LockService, trail: AuditTrailDeps | undefined): void {
  const deps = (): AuditTrailDeps => trail ?? { store: service.store };

  app.get('/v1/admin/audit/export', { schema: routeSchemas.exportAudit, config: { role: 'viewer' } }, async (_request, reply) => {
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
    const body = bodyOf<{ before: number; reason: string }>(request);
    const actor = request.admin!.name;
    const ctx = eventContext(request);
    const { store, pruned } = deps();
    const result = await store.pruneAudit({ before: body.before, audit: { actor, reason: body.reason, requestId: ctx.requestId } });
    pruned?.(result, { actor, reason: body.reason, before: body.before }, ctx);
    return { pruned: result.pruned, checkpoint: result.checkpoint, auditId: result.audit.id };
  });
}
