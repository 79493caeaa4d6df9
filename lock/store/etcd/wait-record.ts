/**
 * One recorded wait on etcd: its key {root}w/{key}/{waitId} on the waiting session's lease, its
 * stored form, and the txn that writes it only while that session incarnation and the instance
 * are live. One definition for both writers: FleetWaitState.beginWait (etcd-fleet.ts) and a try
 * that records its wait in its own txn when it finds the key held (etcd-grants.ts, recordsOnTry).
 * The waits recorded through this process are remembered, so ending one needs no scan.
 */
import type { ICompare, IRequestOp } from 'etcd3';
import type { LockMode } from '../../../contract/records.js';
import type { KeyLayout } from './keys.js';
import { createRevisionIs, createRevisionIsNot, deleteOp, putOp } from './ops.js';
import type { SessionRow } from './records.js';

export interface StoredWait {
  waitId: string;
  sessionId: string;
  /** Create revision of the waiting session's liveness key: the incarnation that waits. */
  sessionRevision: string;
  key: string;
  instanceId: string;
  leaseId: string;
  /** Advisory (the recording server's clock); the create revision orders waits. */
  recordedAt: number;
  /** `shared` for a wait of a shared attempt; absent for an exclusive one, which keeps new shared grants out (writer preference). */
  mode?: LockMode;
}

export interface WaitToWrite {
  waitId: string;
  sessionId: string;
  key: string;
  instanceId: string;
  mode?: LockMode;
}

export interface WaitWrite {
  etcdKey: Buffer;
  /** Only while the session incarnation (whose lease the key joins) and the instance are live. */
  compare: ICompare[];
  put: IRequestOp;
}

export function waitWrite(keys: KeyLayout, req: WaitToWrite, session: SessionRow, now: number): WaitWrite {
  const etcdKey = keys.wait(req.key, req.waitId);
  const stored: StoredWait = {
    waitId: req.waitId,
    sessionId: req.sessionId,
    sessionRevision: session.createRevision,
    key: req.key,
    instanceId: req.instanceId,
    leaseId: session.session.leaseId,
    recordedAt: now,
    // Only a shared wait says so: an exclusive one (the default) is what keeps new shared grants out.
    ...(req.mode === 'shared' ? { mode: req.mode } : {}),
  };
  return {
    etcdKey,
    compare: [createRevisionIs(keys.session(req.sessionId), session.createRevision), createRevisionIsNot(keys.instance(req.instanceId), '0')],
    // A key whose lease is gone cannot be put; the session compare rules that out (its key is on that lease).
    put: putOp(etcdKey, Buffer.from(JSON.stringify(stored)), session.session.leaseId),
  };
}

/** What ends a wait (endWait, or a grant or answer that ends it): its key, and any deadlock verdict marked on it meanwhile. */
export function endWaitOps(keys: KeyLayout, wait: { etcdKey: Buffer; instanceId: string; waitId: string }): IRequestOp[] {
  return [deleteOp(wait.etcdKey), deleteOp(keys.verdict(wait.instanceId, wait.waitId))];
}

/** Waits recorded through this process: their keys, so an end deletes exactly them. */
export class RecordedWaits {
  private readonly byWaitId = new Map<string, { etcdKey: Buffer; instanceId: string }>();

  remember(waitId: string, etcdKey: Buffer, instanceId: string): void {
    this.byWaitId.set(waitId, { etcdKey, instanceId });
  }

  get(waitId: string): { etcdKey: Buffer; instanceId: string } | undefined {
    return this.byWaitId.get(waitId);
  }

  forget(waitId: string): void {
    this.byWaitId.delete(waitId);
  }
}
