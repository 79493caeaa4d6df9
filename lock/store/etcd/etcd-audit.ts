/**
 * The audit trail as the etcd store's parts use it: the SPI's reads, an append planned at this
 * server's clock, and the commit of a txn carrying one (audit-log.ts has the layout and chain).
 */
import type { ICompare, IRequestOp } from 'etcd3';
import type { AuditSealer, UnsealedAuditEntry } from '../../audit/chain.js';
import type { AuditEntry, Page } from '../../../contract/records.js';
import type { AuditDraft, AuditHead, AuditQuery, PruneAuditResult } from '../spi.js';
import * as audit from './audit-log.js';
import type { EtcdContext } from './etcd-context.js';

export class EtcdAudit {
  constructor(
    private readonly ctx: EtcdContext,
    private readonly sealer: AuditSealer,
  ) {}

  listAudit(query: AuditQuery): Promise<Page<AuditEntry>> {
    return audit.listAudit(this.ctx.etcd(), this.ctx.keys, query);
  }

  readAuditChain(): AsyncIterable<AuditEntry> {
    return audit.readAuditChain(this.ctx.etcd(), this.ctx.keys);
  }

  async readAuditHead(): Promise<AuditHead> {
    return audit.publicHead(await this.storedHead());
  }

  /**
   * Deletes the oldest run of entries older than `before`, moves the checkpoint in the sealed head
   * and appends the prune's own entry, in one txn compared on the head (a concurrent append or
   * prune makes it plan again).
   */
  async pruneAudit(req: { before: number; audit: AuditDraft }): Promise<PruneAuditResult> {
    for (;;) {
      const head = await this.storedHead();
      const last = await audit.lastPrunable(this.ctx.etcd(), this.ctx.keys, head, req.before);
      const moved = last ? { ...head, checkpointSeq: Number(last.id), checkpointHash: last.hash } : head;
      const pruned = last ? Number(last.id) - head.checkpointSeq : 0;
      const append = this.plan(moved, req.audit, { action: 'audit.prune', target: 'audit', outcome: pruned > 0 ? 'PRUNED' : 'NOTHING_PRUNED' });
      const ops = last ? [...audit.pruneOps(this.ctx.keys, { seq: moved.checkpointSeq, hash: moved.checkpointHash }), ...append.ops] : append.ops;
      if (!(await this.commit([append.compare], ops, append.entry))) continue;
      return { pruned, checkpoint: { id: String(moved.checkpointSeq), hash: moved.checkpointHash }, audit: append.entry };
    }
  }

  /** The head an append is planned on (its mod revision is what the append's txn compares). */
  storedHead(): Promise<audit.StoredAuditHead> {
    return audit.readAuditHead(this.ctx.etcd(), this.ctx.keys);
  }

  plan(
    head: audit.StoredAuditHead,
    draft: AuditDraft,
    fields: Pick<UnsealedAuditEntry, 'action' | 'target' | 'fencingToken' | 'outcome'>,
  ): audit.PlannedAppend {
    return audit.planAuditAppend(this.ctx.keys, this.sealer, head, this.ctx.clock(), draft, fields);
  }

  /**
   * Commits a txn carrying an audit append. If the outcome is unknown (connection
   * broke), the planned entry decides: present means applied, absent means the
   * compare on the audit head will make a repeat safe. False when a compare failed.
   */
  async commit(compare: ICompare[], ops: IRequestOp[], entry: AuditEntry): Promise<boolean> {
    const started = Date.now();
    for (;;) {
      try {
        const response = await this.ctx.etcd().kv.txn({ compare, success: ops, failure: [] });
        return response.succeeded;
      } catch (error) {
        await this.ctx.pauseIfUnavailable(error, started);
        if (await audit.wasAppended(this.ctx.etcd(), this.ctx.keys, entry)) return true;
      }
    }
  }
}
