/**
 * A try at a mutex on etcd: one txn (shared with the other acquires of this turn) creates the lock
 * key and its record if both are absent, while the session is the incarnation whose hash was
 * checked. Its failure branch reads what decides the answer and, for a try that carries a wait
 * (FleetWaitState.recordsOnTry), records that wait in the same raft entry: a nested txn whose
 * compares admit only "held, not by this session, whose session and instance are live", so a
 * contended acquire costs one write where try and record took two.
 */
import { randomUUID } from 'node:crypto';
import type { IRequestOp, ITxnResponse } from 'etcd3';
import { NotLeaderError } from '../../errors.js';
import { MUTEX, type LockGrant } from '../../../contract/records.js';
import type { AcquireAttempt, HeldLock, TryAcquireResult } from '../spi.js';
import type { AcquireBatcher } from './acquire-batcher.js';
import type { EtcdContext } from './etcd-context.js';
import { MAX_DECISIONS } from './etcd-context.js';
import type { HolderGrants, HolderMemory } from './holder-grants.js';
import { isAnchor } from './holders.js';
import type { GrantLeasePool } from './leases.js';
import { createRevisionIs, createRevisionIsNot, deleteOp, getOp, modRevisionIs, putOp, rangeOp, rangeResult, rangeResults } from './ops.js';
import { committedGrant, decodeLock, decodeSession, encode, newGrantRecord, type SessionRow } from './records.js';
import { endWaitOps, waitWrite } from './wait-record.js';

/** Where the failure branch answers the nested wait record (after lock, session, record, holders). */
const RECORD_RESPONSE = 4;

export class MutexTry {
  constructor(
    private readonly ctx: EtcdContext,
    private readonly grantLeases: GrantLeasePool,
    private readonly acquires: AcquireBatcher,
    private readonly multi: HolderGrants,
    private readonly holders: HolderMemory,
  ) {}

  async tryAcquire(req: AcquireAttempt): Promise<TryAcquireResult> {
    const client = this.ctx.etcd();
    const sessionId = req.session.sessionId;
    const lockKey = this.ctx.keys.lock(req.key);
    const recordKey = this.ctx.keys.lockRecord(sessionId, req.key);
    const sessionKey = this.ctx.keys.session(sessionId);
    const toRecord = req.recordWait;
    const recordKeyOfWait = toRecord ? this.ctx.keys.wait(req.key, toRecord.waitId) : null;
    const endCarriedWait = toRecord && recordKeyOfWait ? endWaitOps(this.ctx.keys, { ...toRecord, etcdKey: recordKeyOfWait }) : [];
    // A grant ends this caller's recorded wait on the key in the same write: the one it names, and the one it
    // carries, which this try or an earlier one whose answer was lost may have recorded.
    const endedByGrant = [
      ...(req.waitId !== undefined && req.waitId !== toRecord?.waitId ? [deleteOp(this.ctx.keys.wait(req.key, req.waitId))] : []),
      ...endCarriedWait,
    ];
    let waitRecorded = false;
    let session = await this.ctx.knownSession(sessionId);
    const writeId = randomUUID();
    let uncertain = false;
    const startedAt = Date.now(); // wall time only for the unavailability budget

    /** Any answer but "held": a wait this try recorded goes (a grant's own txn deleted it already, recorded or not). */
    const unrecorded = async (result: TryAcquireResult, deletedByGrant = false): Promise<TryAcquireResult> => {
      if ((waitRecorded || deletedByGrant) && toRecord && recordKeyOfWait) {
        this.ctx.recordedWaits.forget(toRecord.waitId);
        if (!deletedByGrant) await this.ctx.write(() => client.kv.txn({ compare: [], success: endCarriedWait, failure: [] }));
      }
      return result;
    };

    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      if (!session) return unrecorded({ kind: 'session_not_found' });
      if (session.session.tokenHash !== req.session.tokenHash) return unrecorded({ kind: 'unauthenticated' });
      const leaseId = await this.grantLeases.forTtl(req.ttlMillis);
      const now = this.ctx.clock();
      const current: SessionRow = session;
      const recordOp = toRecord ? this.recordOp(req, current, lockKey, recordKey, now) : null;
      let answer: { response: ITxnResponse; slot: string };
      try {
        // The token is the commit's revision × 1000 + this grant's slot in the batch.
        answer = await this.acquires.submit(lockKey, (slot) => {
          const mine = newGrantRecord({ slot, session: current, attempt: req, leaseId, writeId, now });
          const value = encode(mine);
          return {
            compare: [createRevisionIs(lockKey, '0'), createRevisionIs(recordKey, '0'), createRevisionIs(sessionKey, current.createRevision)],
            success: [putOp(lockKey, value, leaseId), putOp(recordKey, value), ...endedByGrant],
            // The key's multi-holder grants too (none on a mutex key): a key with an anchor is decided on them.
            failure: [getOp(lockKey), getOp(sessionKey), getOp(recordKey), rangeOp(this.ctx.keys.holdersOf(req.key)), ...(recordOp ? [recordOp] : [])],
          };
        });
      } catch (error) {
        // Applied or not? The next round's txn reads back exactly that (this call's writeId on the lock key).
        await this.ctx.pauseIfUnavailable(error, startedAt);
        uncertain = true;
        continue;
      }
      const { response } = answer;
      if (response.succeeded) {
        const grant = committedGrant({ attempt: req, sessionId, revision: response.header.revision, slot: answer.slot, now, holding: MUTEX });
        return unrecorded({ kind: 'granted', grant, owner: current.session.owner, existing: false }, true);
      }
      if (recordOp && toRecord && recordKeyOfWait && (response.responses[RECORD_RESPONSE]?.response_txn as ITxnResponse | undefined)?.succeeded) {
        waitRecorded = true;
        this.ctx.recordedWaits.remember(toRecord.waitId, recordKeyOfWait, toRecord.instanceId);
      }
      const sessionKv = rangeResult(response, 1);
      if (!sessionKv) {
        this.ctx.sessions.forget(sessionId);
        return unrecorded({ kind: 'session_not_found' });
      }
      const fresh = decodeSession(sessionKv);
      this.ctx.sessions.remember(fresh);
      if (fresh.createRevision !== session.createRevision) {
        session = fresh; // another incarnation under this id: its hash is checked next round
        continue;
      }
      const lockKv = rangeResult(response, 0);
      const ownRecordKv = rangeResult(response, 2);
      if (!lockKv) {
        // Free, but our record of an earlier grant of this key was not swept yet: it can no
        // longer be reported (its key is being reused), so drop it and take the key.
        if (ownRecordKv) await this.ctx.deleteIfUnchanged(ownRecordKv);
        continue;
      }
      if (isAnchor(lockKv)) {
        // Shared or semaphore grants hold the key, or held it: they answer, or the key is taken over.
        const answered = await this.multi.mutexOnAnchor(req.key, lockKv, rangeResults(response, 3), session, response.header.revision);
        if (answered?.kind === 'held') return { ...answered, ...(waitRecorded ? { waitRecorded: true } : {}) };
        if (answered) return unrecorded(answered);
        continue;
      }
      const row = decodeLock(req.key, lockKv);
      if (row.stored.sessionId === sessionId && row.stored.sessionRevision === session.createRevision) {
        // Ours already. If our own earlier attempt broke mid-flight and landed, it is this call's grant.
        const landed = uncertain && row.stored.writeId === writeId;
        return unrecorded({ kind: 'granted', grant: stripOwner(row.lock), owner: row.lock.owner, existing: !landed }, landed);
      }
      if (await this.ctx.sessionIncarnationLive(row.stored.sessionId, row.stored.sessionRevision)) {
        // The failed attempt's revision: a release after it is what a waiter waits for.
        this.holders.rememberHolders(req.key, [row.stored.sessionId]);
        return { kind: 'held', holder: row.lock, observedRevision: response.header.revision, ...(waitRecorded ? { waitRecorded: true } : {}) };
      }
      // The holder's session lapsed (its lease ran out) but nobody swept yet: the lock is free.
      // Remove exactly that incarnation of the key (its record stays for the sweeper), then create anew.
      await this.ctx.write(() =>
        client.kv.txn({
          compare: [modRevisionIs(lockKey, row.modRevision), createRevisionIsNot(this.ctx.keys.session(row.stored.sessionId), row.stored.sessionRevision)],
          success: [deleteOp(lockKey)],
          failure: [],
        }),
      );
    }
    await unrecorded({ kind: 'session_not_found' });
    throw new NotLeaderError(`acquire of ${JSON.stringify(req.key)} kept racing other writers`);
  }

  /**
   * The wait's record, put only when the key is held by a grant that is not this session's (the
   * lock key exists, this session's record of the key does not) and the session incarnation and
   * the instance are live. A record put again over itself (a retried round) keeps its create
   * revision, which is what orders waits.
   */
  private recordOp(req: AcquireAttempt, session: SessionRow, lockKey: Buffer, recordKey: Buffer, now: number): IRequestOp {
    const wait = req.recordWait!;
    const write = waitWrite(this.ctx.keys, { waitId: wait.waitId, sessionId: req.session.sessionId, key: req.key, instanceId: wait.instanceId, ...(wait.mode ? { mode: wait.mode } : {}) }, session, now);
    return {
      request_txn: {
        compare: [...write.compare, createRevisionIsNot(lockKey, '0'), createRevisionIs(recordKey, '0')],
        success: [write.put],
        failure: [],
      },
    };
  }
}

/** A held lock as its grant (the owner is answered beside it). */
const stripOwner = ({ owner: _owner, ...grant }: HeldLock): LockGrant => grant;
