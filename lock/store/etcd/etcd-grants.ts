/**
 * Grants on etcd: acquire, renew, release, the reads of held locks, forced revocation and the
 * sweep of lapsed grants. A lock is live while its liveness key {root}l/{key} (on a lease that
 * lives at least its TTL) exists AND its holder's session incarnation is live; its fencing token
 * is the key's create revision × 1000 + its slot in the granting txn (grant-tokens.ts).
 */
import { randomUUID } from 'node:crypto';
import type { ITxnResponse } from 'etcd3';
import { NotLeaderError } from '../../errors.js';
import { type FencingToken, type Page } from '../../../contract/records.js';
import type {
  AuditDraft,
  EndedLock,
  ForceRevokeResult,
  HeldLock,
  ListQuery,
  ReleaseResult,
  RenewResult,
  SessionCredential,
  TryAcquireResult,
  RenewRequest,
  AcquireAttempt,
} from '../spi.js';
import { AcquireBatcher } from './acquire-batcher.js';
import { decodeKeyCursor, encodeCursor } from './cursors.js';
import { range, readTxn } from './etcd-client.js';
import type { EtcdAudit } from './etcd-audit.js';
import { MAX_DECISIONS, type EtcdContext } from './etcd-context.js';
import { slotIs, tokenParts } from './grant-tokens.js';
import { GrantLeasePool, grantLease } from './leases.js';
import {
  createRevisionIs,
  deletedResult,
  deleteOp,
  getOp,
  modRevisionIs,
  prefixRange,
  putOp,
  rangeResult,
} from './ops.js';
import { decodeLock, decodeSession, encode, type StoredLock } from './records.js';
import { ReleaseBatcher } from './release-batcher.js';
import { landedDelete } from './landed-delete.js';
import { HolderGrants, type HolderMemory } from './holder-grants.js';
import { EtcdRevocation } from './etcd-revocation.js';
import { MutexTry } from './mutex-try.js';
import { endInRounds } from './sweep-rounds.js';
import { holdingOf } from '../../../contract/wire-rules.js';
import { describeHolders, dropAnchorIfEmpty, isAnchor, isMutex, liveHolders, livenessKey } from './holders.js';

export type { HolderMemory } from './holder-grants.js';

export class EtcdGrants {
  private readonly grantLeases: GrantLeasePool;
  private readonly releases: ReleaseBatcher;
  private readonly acquires: AcquireBatcher;
  /** Shared and limit > 1 grants (holder-grants.ts). */
  private readonly multi: HolderGrants;
  /** Mutex tries, with the wait a contended one records in its own txn (mutex-try.ts). */
  private readonly mutex: MutexTry;
  private readonly revocation: EtcdRevocation;

  constructor(
    private readonly ctx: EtcdContext,
    audit: EtcdAudit,
    holders: HolderMemory,
    acquireBatching: boolean,
  ) {
    this.grantLeases = new GrantLeasePool((seconds) => ctx.write(() => grantLease(ctx.etcd(), seconds)));
    this.releases = new ReleaseBatcher(
      () => ctx.etcd(),
      (attempt) => ctx.writeTellingResends(attempt),
    );
    this.acquires = new AcquireBatcher(() => ctx.etcd(), acquireBatching);
    this.multi = new HolderGrants(ctx, this.grantLeases, this.acquires, holders);
    this.mutex = new MutexTry(ctx, this.grantLeases, this.acquires, this.multi, holders);
    this.revocation = new EtcdRevocation(ctx, audit);
  }

  async tryAcquire(req: AcquireAttempt): Promise<TryAcquireResult> {
    const want = holdingOf(req);
    return isMutex(want) ? this.mutex.tryAcquire(req) : this.multi.tryAcquire(req, want);
  }

  async renew(req: RenewRequest): Promise<RenewResult> {
    const client = this.ctx.etcd();
    const sessionId = req.session.sessionId;
    const lockKey = this.ctx.keys.lock(req.key);
    const sessionKey = this.ctx.keys.session(sessionId);
    // A grant of a multi-holder key lives at its own key (holders.ts), read in the same txn.
    const holderKey = this.ctx.keys.holder(req.key, sessionId);
    const startedAt = Date.now();
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      const read = await readTxn(client, { success: [getOp(lockKey), getOp(sessionKey), getOp(holderKey)] });
      const sessionKv = rangeResult(read, 1);
      if (!sessionKv) {
        this.ctx.sessions.forget(sessionId);
        return { kind: 'session_not_found' };
      }
      const session = decodeSession(sessionKv);
      this.ctx.sessions.remember(session);
      if (session.session.tokenHash !== req.session.tokenHash) return { kind: 'unauthenticated' };
      const mutexKv = rangeResult(read, 0);
      const lockKv = mutexKv && !isAnchor(mutexKv) ? mutexKv : rangeResult(read, 2);
      if (!lockKv) return { kind: 'lost' };
      const liveKey = lockKv.key;
      const row = decodeLock(req.key, lockKv);
      if (row.lock.fencingToken !== req.fencingToken) return { kind: 'lost' };
      if (row.stored.sessionId !== sessionId || row.stored.sessionRevision !== session.createRevision) return { kind: 'lost' };
      // etcd keeps no clock: the grant's age is by this server's reading, like its grantedAt.
      if (req.maxHoldMillis !== undefined && this.ctx.clock() - row.stored.grantedAt >= req.maxHoldMillis) {
        return { kind: 'hold_limit', lock: row.lock };
      }

      // The key moves to a fresh lease with the (kept or new) TTL: etcd's clock restarts from there.
      const ttlMillis = req.ttlMillis ?? row.stored.ttlMillis;
      const leaseId = await this.grantLeases.forTtl(ttlMillis);
      const now = this.ctx.clock();
      // A proclaim (issue 23) replaces the value in the same put: same key, same create revision, same token.
      const renewed: StoredLock = {
        ...row.stored,
        ttlMillis,
        expiresAt: now + ttlMillis,
        leaseId,
        writeId: randomUUID(),
        ...(req.value !== undefined ? { value: req.value } : {}),
      };
      let response: ITxnResponse;
      try {
        response = await client.kv.txn({
          compare: [modRevisionIs(liveKey, row.modRevision), createRevisionIs(sessionKey, session.createRevision)],
          // A PUT on an existing key keeps its create revision: same fencing token, new lease.
          success: [putOp(liveKey, encode(renewed), leaseId), putOp(this.ctx.keys.lockRecord(sessionId, req.key), encode(renewed))],
          failure: [],
        });
      } catch (error) {
        await this.ctx.pauseIfUnavailable(error, startedAt);
        // Applied or not: the lock key carries this call's write exactly when it was.
        const check = (await range(client, { key: liveKey })).kvs[0];
        if (check && decodeLock(req.key, check).lock.fencingToken === req.fencingToken) {
          const landed = decodeLock(req.key, check);
          if (landed.stored.writeId === renewed.writeId) return { kind: 'renewed', lock: landed.lock };
        }
        continue;
      }
      if (response.succeeded) {
        return { kind: 'renewed', lock: { ...row.lock, ttlMillis, expiresAt: renewed.expiresAt, ...(req.value !== undefined ? { value: req.value } : {}) } };
      }
    }
    throw new NotLeaderError(`renew of ${JSON.stringify(req.key)} kept racing other writers`);
  }

  async release(req: { key: string; session: SessionCredential; fencingToken: FencingToken }): Promise<ReleaseResult> {
    const sessionId = req.session.sessionId;
    const lockKey = this.ctx.keys.lock(req.key);
    const recordKey = this.ctx.keys.lockRecord(sessionId, req.key);
    const sessionKey = this.ctx.keys.session(sessionId);
    const holderKey = this.ctx.keys.holder(req.key, sessionId);
    let session = await this.ctx.knownSession(sessionId);
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      if (!session) return { kind: 'session_not_found' };
      if (session.session.tokenHash !== req.session.tokenHash) return { kind: 'unauthenticated' };
      // Compare-and-delete on (key, token) of this session incarnation's grant, sharing a round trip with
      // concurrent releases. Retried only on unavailability: a resend of an applied delete fails its
      // compare, never deletes twice, and is then told apart from a grant that ended otherwise
      // (releasedEarlier). The token names the grant by create revision and slot (grant-tokens.ts):
      // both are compared.
      const token = tokenParts(req.fencingToken);
      if (!token) return { kind: 'lost' };
      const { response, resent } = await this.releases.submit(lockKey, {
        compare: [
          createRevisionIs(lockKey, token.revision),
          ...slotIs(lockKey, token.slot),
          createRevisionIs(recordKey, token.revision),
          createRevisionIs(sessionKey, session.createRevision),
        ],
        // Only the lock key's deleted value is read back (the record is its copy).
        success: [deleteOp(lockKey), deleteOp(recordKey, false)],
        // Not a mutex grant: the same compare-and-delete on the session's grant of a multi-holder key
        // (holders.ts), in the same round trip; it then counts the grants left under the key.
        failure: [
          getOp(sessionKey),
          {
            request_txn: {
              compare: [
                createRevisionIs(holderKey, token.revision),
                ...slotIs(holderKey, token.slot),
                createRevisionIs(recordKey, token.revision),
                createRevisionIs(sessionKey, session.createRevision),
              ],
              success: [deleteOp(holderKey), deleteOp(recordKey, false), { request_range: { ...prefixRange(this.ctx.keys.holdersOf(req.key)), count_only: true } }],
              failure: [],
            },
          },
        ],
      });
      if (response.succeeded) {
        const deleted = deletedResult(response, 0);
        if (!deleted) return { kind: 'lost' };
        const row = decodeLock(req.key, deleted);
        return { kind: 'released', lock: { ...row.lock, endedAt: this.ctx.clock() } };
      }
      const holderRelease = response.responses[1]?.response_txn as ITxnResponse | undefined;
      const deletedHolder = holderRelease?.succeeded ? deletedResult(holderRelease, 0) : undefined;
      if (deletedHolder) {
        const row = decodeLock(req.key, deletedHolder);
        // The last grant under the key: its anchor goes too (a grant landing meanwhile keeps it).
        if (Number(holderRelease!.responses[2]?.response_range?.count ?? 1) === 0) await dropAnchorIfEmpty(this.ctx, req.key);
        return { kind: 'released', lock: { ...row.lock, endedAt: this.ctx.clock() } };
      }
      const sessionKv = rangeResult(response, 0);
      if (!sessionKv) {
        this.ctx.sessions.forget(sessionId);
        return { kind: 'session_not_found' };
      }
      const fresh = decodeSession(sessionKv);
      this.ctx.sessions.remember(fresh);
      if (fresh.createRevision === session.createRevision) {
        if (resent) return this.releasedEarlier(req, { lockKey, holderKey, recordKey, createRevision: token.revision, goneBy: response.header.revision });
        return { kind: 'lost' };
      }
      session = fresh;
    }
    throw new NotLeaderError(`release of ${JSON.stringify(req.key)} kept racing other writers`);
  }

  /** A resent release found its grant gone: `released` if it was this holder's release that ended it (landed-delete.ts). */
  private async releasedEarlier(
    req: { key: string; fencingToken: FencingToken },
    at: { lockKey: Buffer; holderKey: Buffer; recordKey: Buffer; createRevision: string; goneBy: string },
  ): Promise<ReleaseResult> {
    const createRevision = BigInt(at.createRevision);
    // The grant's record is created with its liveness key and deleted with it by a release.
    const query = { createRevision, companion: { key: at.recordKey, createRevision }, auditHead: this.ctx.keys.auditHead, goneBy: BigInt(at.goneBy) };
    const client = this.ctx.etcd();
    const mutex = await landedDelete(client, { ...query, key: at.lockKey });
    const landed = mutex ?? (await landedDelete(client, { ...query, key: at.holderKey }));
    const row = landed ? decodeLock(req.key, landed) : null;
    // The create revision names the grant; its slot must match the token too, as the compare-and-delete's did.
    if (!row || row.lock.fencingToken !== req.fencingToken) return { kind: 'lost' };
    if (!mutex) await dropAnchorIfEmpty(this.ctx, req.key);
    return { kind: 'released', lock: { ...row.lock, endedAt: this.ctx.clock() } };
  }

  async readLock(key: string): Promise<HeldLock | null> {
    const response = await range(this.ctx.etcd(), { key: this.ctx.keys.lock(key) });
    const kv = response.kvs[0];
    if (!kv) return null;
    if (isAnchor(kv)) return this.readHolders(key);
    const row = decodeLock(key, kv);
    return (await this.ctx.sessionIncarnationLive(row.stored.sessionId, row.stored.sessionRevision)) ? row.lock : null;
  }

  async listLocks(query: ListQuery & { prefix?: string }): Promise<Page<HeldLock>> {
    const checked = new Map<string, Promise<boolean>>();
    const page = await this.ctx.pageOf(this.ctx.keys.locksPrefix, query.prefix ?? '', decodeKeyCursor(query.cursor), query.limit, async (kv) => {
      // A multi-holder key's grant keys sort right after its anchor, and are listed through it.
      const key = this.ctx.keys.lockKeyOf(kv.key);
      if (key === null) return null;
      if (isAnchor(kv)) return this.readHolders(key);
      const row = decodeLock(key, kv);
      const incarnation = `${row.stored.sessionId}@${row.stored.sessionRevision}`;
      let live = checked.get(incarnation);
      if (!live) {
        live = this.ctx.sessionIncarnationLive(row.stored.sessionId, row.stored.sessionRevision);
        checked.set(incarnation, live);
      }
      return (await live) ? row.lock : null;
    });
    return { items: page.items, nextCursor: encodeCursor(page.nextCursor) };
  }

  /** A multi-holder key (its anchor read): its lowest-token live grant with every live grant, or null. */
  private async readHolders(key: string): Promise<HeldLock | null> {
    const response = await range(this.ctx.etcd(), prefixRange(this.ctx.keys.holdersOf(key)));
    return describeHolders(await liveHolders(this.ctx, key, response.kvs));
  }

  async forceRevoke(req: { key: string; expectedFencingToken?: FencingToken; audit: AuditDraft }): Promise<ForceRevokeResult> {
    return this.revocation.forceRevoke(req);
  }

  /**
   * Grants whose lease ran out (etcd already deleted their liveness key, or
   * an acquirer took the key over from a lapsed session) but whose record is
   * still here: the record is deleted and the grant reported, once.
   */
  async expireLocks(limit: number): Promise<EndedLock[]> {
    const removed: EndedLock[] = [];
    if (limit <= 0) return removed;
    for await (const records of this.ctx.scanPages(this.ctx.keys.lockRecordsPrefix)) {
      const rows = records.flatMap((kv) => {
        const named = this.ctx.keys.lockRecordOf(kv.key);
        return named ? [{ kv, row: decodeLock(named.key, kv) }] : [];
      });
      const liveKeys = await this.ctx.readKeys(rows.map(({ row }) => livenessKey(this.ctx.keys, row)));
      const lapsed = rows.filter(({ row }, index) => {
        const live = liveKeys[index];
        return !(live && String(live.create_revision) === row.createRevision);
      });
      removed.push(
        ...(await endInRounds(lapsed, limit - removed.length, async ({ kv, row }): Promise<EndedLock | null> => {
          const response = await this.ctx.write(() =>
            this.ctx.etcd().kv.txn({ compare: [modRevisionIs(kv.key, row.modRevision)], success: [deleteOp(kv.key)], failure: [] }),
          );
          if (!response.succeeded) return null;
          const endedAt = this.ctx.clock();
          if (row.stored.mode !== undefined) await dropAnchorIfEmpty(this.ctx, row.lock.key);
          return { ...row.lock, endedAt };
        })),
      );
      if (removed.length >= limit) break;
    }
    return removed;
  }
}
