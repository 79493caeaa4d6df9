/**
 * Forced revocation on etcd (A3): one grant, the one the expected token names or else the
 * lowest-token live one, deleted with its audit entry in one txn that pins what was read.
 */
import type { ICompare, IKeyValue } from 'etcd3';
import { NotLeaderError } from '../../errors.js';
import type { FencingToken } from '../../../contract/records.js';
import type { AuditDraft, ForceRevokeResult } from '../spi.js';
import { range } from './etcd-client.js';
import type { EtcdAudit } from './etcd-audit.js';
import { MAX_DECISIONS, type EtcdContext } from './etcd-context.js';
import { createRevisionIs, createRevisionIsNot, deleteOp, modRevisionIs, prefixRange } from './ops.js';
import { decodeLock, type LockRow } from './records.js';
import { dropAnchorIfEmpty, isAnchor, liveHolders, livenessKey } from './holders.js';

export class EtcdRevocation {
  constructor(
    private readonly ctx: EtcdContext,
    private readonly audit: EtcdAudit,
  ) {}

  async forceRevoke(req: { key: string; expectedFencingToken?: FencingToken; audit: AuditDraft }): Promise<ForceRevokeResult> {
    const lockKey = this.ctx.keys.lock(req.key);
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      const [lockResponse, head] = await Promise.all([range(this.ctx.etcd(), { key: lockKey }), this.audit.storedHead()]);
      const kv = lockResponse.kvs[0];
      const { compare, live } = kv && isAnchor(kv) ? await this.revocableHolders(req.key, kv) : await this.revocableMutex(req.key, kv);
      // The grant the token names, or else the lowest-token one: one permit at a time.
      const target = req.expectedFencingToken !== undefined ? live.find((row) => row.lock.fencingToken === req.expectedFencingToken) : live[0];
      const outcome = live.length === 0 ? 'NOT_HELD' : !target ? 'TOKEN_MISMATCH' : 'REVOKED';
      const append = this.audit.plan(head, req.audit, {
        action: 'lock.revoke',
        target: req.key,
        fencingToken: target?.lock.fencingToken ?? live[0]?.lock.fencingToken ?? req.expectedFencingToken,
        outcome,
      });
      let ops = append.ops;
      const named = target ?? live[0];
      if (named?.stored.mode !== undefined) {
        // The multi-holder grant the answer names is still that live grant (a mutex's is pinned with its key).
        compare.push(
          modRevisionIs(this.ctx.keys.holder(req.key, named.stored.sessionId), named.modRevision),
          createRevisionIs(this.ctx.keys.session(named.stored.sessionId), named.stored.sessionRevision),
        );
      }
      if (target) {
        const liveKey = livenessKey(this.ctx.keys, target);
        const recordKey = this.ctx.keys.lockRecord(target.stored.sessionId, req.key);
        compare.push(createRevisionIs(liveKey, target.createRevision), createRevisionIs(recordKey, target.createRevision));
        ops = [deleteOp(liveKey), deleteOp(recordKey), ...append.ops];
      }
      if (!(await this.audit.commit([...compare, append.compare], ops, append.entry))) continue;
      if (target) {
        if (target.stored.mode !== undefined) await dropAnchorIfEmpty(this.ctx, req.key);
        return { outcome: 'REVOKED', revoked: { ...target.lock, endedAt: append.entry.at }, audit: append.entry };
      }
      if (live[0]) return { outcome: 'TOKEN_MISMATCH', holder: live[0].lock, audit: append.entry };
      return { outcome: 'NOT_HELD', audit: append.entry };
    }
    throw new NotLeaderError(`revoke of ${JSON.stringify(req.key)} kept racing other writers`);
  }

  /** A mutex key's live grant (none or one), with the compares that pin the reading. */
  private async revocableMutex(key: string, kv: IKeyValue | undefined): Promise<{ compare: ICompare[]; live: LockRow[] }> {
    const lockKey = this.ctx.keys.lock(key);
    const row = kv ? decodeLock(key, kv) : null;
    const compare: ICompare[] = [modRevisionIs(lockKey, row?.modRevision ?? '0')];
    if (!row) return { compare, live: [] };
    const holderKey = this.ctx.keys.session(row.stored.sessionId);
    if (await this.ctx.sessionIncarnationLive(row.stored.sessionId, row.stored.sessionRevision)) {
      compare.push(createRevisionIs(holderKey, row.stored.sessionRevision));
      return { compare, live: [row] };
    }
    compare.push(createRevisionIsNot(holderKey, row.stored.sessionRevision));
    return { compare, live: [] };
  }

  /**
   * A multi-holder key's live grants (lowest token first), with the compare that pins the reading:
   * the anchor, which every new grant rewrites. A grant read as not live stays so (its lease or session
   * incarnation ended for good); the grant the answer names is pinned by the caller.
   */
  private async revocableHolders(key: string, anchorKv: IKeyValue): Promise<{ compare: ICompare[]; live: LockRow[] }> {
    const response = await range(this.ctx.etcd(), prefixRange(this.ctx.keys.holdersOf(key)));
    const live = await liveHolders(this.ctx, key, response.kvs);
    const compare: ICompare[] = [modRevisionIs(this.ctx.keys.lock(key), String(anchorKv.mod_revision))];
    return { compare, live };
  }
}
