/**
 * Acquires of multi-holder keys on etcd (holders.ts has the records), and what a mutex attempt
 * answers when it finds a key's anchor.
 *
 * An attempt is one loop of txns, each through the acquire batcher (a slot per grant, as mutex
 * grants: grant-tokens.ts): "create the anchor, my grant key and my grant record, if the anchor is as
 * I last read it, my grant key and record are absent and my session incarnation is live". The first
 * txn expects no anchor, so a free key is granted in one round trip; a failed txn reads back the
 * key's state (anchor, grant keys, and for a shared attempt the key's recorded waits), the attempt
 * decides on it, and either answers (existing, held, limit_mismatch) or sends the grant again
 * expecting exactly that anchor. A shared grant decided while the key had live grants also compares
 * that no wait was recorded on the key since the read (writer preference is part of the decision).
 */
import { randomUUID } from 'node:crypto';
import type { ICompare, IKeyValue, ITxnResponse } from 'etcd3';
import { NotLeaderError } from '../../errors.js';
import type { AcquireAttempt, TryAcquireResult } from '../spi.js';
import type { AcquireBatcher } from './acquire-batcher.js';
import { MAX_DECISIONS, type EtcdContext } from './etcd-context.js';
import type { StoredWait } from './wait-record.js';
import { admission } from '../multi-holder.js';
import { encodeAnchor, isAnchor, liveHolders, type Holding } from './holders.js';
import type { GrantLeasePool } from './leases.js';
import {
  createRevisionIs,
  createRevisionIsNot,
  deleteOp,
  getOp,
  modRevisionIs,
  nothingCreatedUnderAfter,
  putOp,
  rangeOp,
  rangeResult,
  rangeResults,
} from './ops.js';
import { committedGrant, decodeLock, decodeSession, encode, newGrantRecord, type LockRow, type SessionRow, type StoredLock } from './records.js';

/** Rounds one attempt may take in all, however many of them other grants won (each a txn). */
const MAX_ROUNDS = 2_048;

/** Where a failed acquire leaves who held the key, so the wait that follows also ends with those sessions. */
export interface HolderMemory {
  rememberHolders(key: string, sessionIds: readonly string[]): void;
}

/** A wait watches at most this many holder sessions of a multi-holder key (the others' ends reach it by their grant keys or core's re-checks). */
const MAX_WATCHED_HOLDERS = 16;

/** What an attempt answers on a key that has live grants, or `admit` when it may take one. */
type Verdict = { kind: 'answer'; result: TryAcquireResult } | { kind: 'admit' };

export class HolderGrants {
  /**
   * The attempt on each key this process is deciding now, and the ones queued behind it. Every grant
   * on a key rewrites its anchor, so attempts decided on one reading of it all lose but one: racing
   * each other, n attempts on a key would cost some n²/2 txns. One at a time per key, each decides on
   * the state its predecessor left (two txns at most, unless another process wins meanwhile).
   */
  private readonly deciding = new Map<string, Promise<unknown>>();

  constructor(
    private readonly ctx: EtcdContext,
    private readonly grantLeases: GrantLeasePool,
    private readonly acquires: AcquireBatcher,
    private readonly memory: HolderMemory,
  ) {}

  tryAcquire(req: AcquireAttempt, want: Holding): Promise<TryAcquireResult> {
    const before = this.deciding.get(req.key);
    const mine = (before ?? Promise.resolve()).then(
      () => this.decideAttempt(req, want),
      () => this.decideAttempt(req, want),
    );
    const settled = mine.catch(() => undefined);
    this.deciding.set(req.key, settled);
    void settled.then(() => {
      if (this.deciding.get(req.key) === settled) this.deciding.delete(req.key);
    });
    return mine;
  }

  private async decideAttempt(req: AcquireAttempt, want: Holding): Promise<TryAcquireResult> {
    const keys = this.ctx.keys;
    const sessionId = req.session.sessionId;
    const lockKey = keys.lock(req.key);
    const holderKey = keys.holder(req.key, sessionId);
    const recordKey = keys.lockRecord(sessionId, req.key);
    const sessionKey = keys.session(sessionId);
    const endedWait = req.waitId !== undefined ? keys.wait(req.key, req.waitId) : null;
    const anchor = encodeAnchor(want);
    let session = await this.ctx.knownSession(sessionId);
    const writeId = randomUUID();
    let uncertain = false;
    const startedAt = Date.now(); // wall time only for the unavailability budget
    // What the next grant txn expects of the key: at first no anchor (a free key takes one round trip).
    let expected: ICompare[] = [createRevisionIs(lockKey, '0')];
    // The anchor's mod revision `expected` names ('0': absent).
    let expectedAnchor = '0';
    // A round lost because the anchor moved (another grant landed, or the key was emptied or taken) is
    // someone else's progress, so it is not charged to this attempt's decisions: many attempts racing
    // for the room of one key each lose a round per grant that lands before theirs.
    let decisions = 0;
    for (let round = 0; decisions < MAX_DECISIONS && round < MAX_ROUNDS; round += 1) {
      decisions += 1;
      if (!session) return { kind: 'session_not_found' };
      if (session.session.tokenHash !== req.session.tokenHash) return { kind: 'unauthenticated' };
      const leaseId = await this.grantLeases.forTtl(req.ttlMillis);
      const now = this.ctx.clock();
      const current: SessionRow = session;
      const expect = expected;
      let answer: { response: ITxnResponse; slot: string };
      try {
        answer = await this.acquires.submit(lockKey, (slot) => {
          const mine: StoredLock = { ...newGrantRecord({ slot, session: current, attempt: req, leaseId, writeId, now }), mode: want.mode, limit: want.limit };
          const value = encode(mine);
          return {
            compare: [...expect, createRevisionIs(holderKey, '0'), createRevisionIs(recordKey, '0'), createRevisionIs(sessionKey, current.createRevision)],
            // The anchor is rewritten by every grant: what the next decision on the key compares.
            success: [putOp(lockKey, anchor), putOp(holderKey, value, leaseId), putOp(recordKey, value), ...(endedWait ? [deleteOp(endedWait)] : [])],
            failure: [
              getOp(lockKey),
              getOp(sessionKey),
              getOp(recordKey),
              rangeOp(keys.holdersOf(req.key)),
              ...(want.mode === 'shared' ? [rangeOp(keys.waitsOn(req.key))] : []),
            ],
          };
        });
      } catch (error) {
        // Applied or not? The next round's txn reads back exactly that (this call's writeId on its grant key).
        await this.ctx.pauseIfUnavailable(error, startedAt);
        uncertain = true;
        continue;
      }
      const { response } = answer;
      if (response.succeeded) {
        const grant = committedGrant({ attempt: req, sessionId, revision: response.header.revision, slot: answer.slot, now, holding: want });
        return { kind: 'granted', grant, owner: current.session.owner, existing: false };
      }
      const sessionKv = rangeResult(response, 1);
      if (!sessionKv) {
        this.ctx.sessions.forget(sessionId);
        return { kind: 'session_not_found' };
      }
      const fresh = decodeSession(sessionKv);
      this.ctx.sessions.remember(fresh);
      if (fresh.createRevision !== session.createRevision) {
        session = fresh;
        continue;
      }
      const lockKv = rangeResult(response, 0);
      if ((lockKv ? String(lockKv.mod_revision) : '0') !== expectedAnchor) decisions -= 1;
      const holderKvs = rangeResults(response, 3);
      const own = holderKvs.find((kv) => kv.key.equals(holderKey));
      if (own) {
        const row = decodeLock(req.key, own);
        // Ours (a grant key exists only while its lease runs). If our own earlier attempt landed, it is this call's grant.
        if (row.stored.sessionRevision === session.createRevision) return existing(row, uncertain && row.stored.writeId === writeId);
      }
      if (lockKv && !isAnchor(lockKv)) {
        // A mutex grant holds the key, or held it until its session lapsed.
        const row = decodeLock(req.key, lockKv);
        if (row.stored.sessionId === sessionId && row.stored.sessionRevision === session.createRevision) return existing(row, false);
        if (await this.ctx.sessionIncarnationLive(row.stored.sessionId, row.stored.sessionRevision)) {
          return this.answerOn([row], want, response.header.revision);
        }
        // Free: remove exactly that incarnation of the key (its record stays for the sweeper), then grant anew.
        await this.takeOverLapsedMutex(lockKey, row);
        expected = [createRevisionIs(lockKey, '0')];
        expectedAnchor = '0';
        continue;
      }
      const recordKv = rangeResult(response, 2);
      if (recordKv) {
        // Our record of an earlier grant of this key, not swept yet: it can no longer be reported.
        await this.ctx.deleteIfUnchanged(recordKv);
      }
      if (own) await this.ctx.deleteIfUnchanged(own); // a grant key of an ended incarnation of our session
      expectedAnchor = lockKv ? String(lockKv.mod_revision) : '0';
      expected = lockKv ? [modRevisionIs(lockKey, expectedAnchor)] : [createRevisionIs(lockKey, '0')];
      const live = await liveHolders(this.ctx, req.key, holderKvs);
      if (live.length === 0) continue;
      const verdict = await this.decide(live, want, sessionId, rangeResults(response, 4));
      if (verdict.kind === 'answer') {
        if (verdict.result.kind === 'held') return { ...verdict.result, observedRevision: response.header.revision };
        return verdict.result;
      }
      // Writer preference was decided on the waits this read saw: a wait recorded since fails the grant.
      if (want.mode === 'shared') expected = [...expected, nothingCreatedUnderAfter(keys.waitsOn(req.key), response.header.revision)];
    }
    throw new NotLeaderError(`acquire of ${JSON.stringify(req.key)} kept racing other writers`);
  }

  /**
   * A mutex attempt found the key's anchor: the key's live grants answer it (its own grant is
   * `existing`; a key of another limit is limit_mismatch; else held), or, with none live, the anchor
   * is deleted (exactly as read) and the caller tries again.
   */
  async mutexOnAnchor(key: string, anchorKv: IKeyValue, holderKvs: readonly IKeyValue[], session: SessionRow, revision: string): Promise<TryAcquireResult | null> {
    const live = await liveHolders(this.ctx, key, holderKvs);
    const own = live.find((row) => row.stored.sessionId === session.session.sessionId && row.stored.sessionRevision === session.createRevision);
    if (own) return existing(own, false);
    if (live.length > 0) return this.answerOn(live, { mode: 'exclusive', limit: 1 }, revision);
    const lockKey = this.ctx.keys.lock(key);
    await this.ctx.write(() =>
      this.ctx.etcd().kv.txn({ compare: [modRevisionIs(lockKey, String(anchorKv.mod_revision))], success: [deleteOp(lockKey, false)], failure: [] }),
    );
    return null;
  }

  /** The multi-holder rules (multi-holder.ts admission) on the key's live grants, lowest token first. */
  private async decide(live: readonly LockRow[], want: Holding, sessionId: string, waitKvs: readonly IKeyValue[]): Promise<Verdict> {
    const locks = live.map((row) => row.lock);
    let verdict = admission(locks, want);
    // Writer preference is read only when it can decide: a shared attempt the grants alone would admit.
    if (verdict.kind === 'admitted' && want.mode === 'shared' && (await this.exclusiveWaitOfAnother(waitKvs, sessionId))) {
      verdict = admission(locks, want, true);
    }
    if (verdict.kind === 'admitted') return { kind: 'admit' };
    return { kind: 'answer', result: verdict.kind === 'held' ? this.held(live) : verdict };
  }

  /** The answer on a key whose live grants (lowest token first) leave no room for `want`. */
  private answerOn(live: readonly LockRow[], want: Holding, revision: string): TryAcquireResult {
    const verdict = admission(
      live.map((row) => row.lock),
      want,
    );
    if (verdict.kind === 'limit_mismatch') return verdict;
    // A mutex grant leaves a multi-holder attempt of its limit no room, as multi-holder grants leave a mutex attempt none.
    return { ...this.held(live), observedRevision: revision };
  }

  /** `held`, naming the lowest-token live grant; the wait that follows also ends with the holders' sessions. */
  private held(live: readonly LockRow[]): TryAcquireResult & { kind: 'held' } {
    const [lowest] = live as [LockRow];
    const sessions = [...new Set(live.slice(0, MAX_WATCHED_HOLDERS).map((row) => row.stored.sessionId))];
    this.memory.rememberHolders(lowest.lock.key, sessions);
    return { kind: 'held', holder: lowest.lock };
  }

  /** A wait on the key, recorded exclusive (no mode) by another session, whose session and instance are live. */
  private async exclusiveWaitOfAnother(waitKvs: readonly IKeyValue[], sessionId: string): Promise<boolean> {
    const waits = waitKvs
      .map((kv) => JSON.parse(kv.value.toString('utf8')) as StoredWait)
      .filter((wait) => wait.sessionId !== sessionId && wait.mode !== 'shared');
    const live = await Promise.all(
      waits.map(async (wait) => {
        const [instance, sessionLive] = await Promise.all([
          this.ctx.pointReads.read(this.ctx.keys.instance(wait.instanceId)),
          this.ctx.sessionIncarnationLive(wait.sessionId, wait.sessionRevision),
        ]);
        return instance !== undefined && sessionLive;
      }),
    );
    return live.some(Boolean);
  }

  private async takeOverLapsedMutex(lockKey: Buffer, row: LockRow): Promise<void> {
    await this.ctx.write(() =>
      this.ctx.etcd().kv.txn({
        compare: [modRevisionIs(lockKey, row.modRevision), createRevisionIsNot(this.ctx.keys.session(row.stored.sessionId), row.stored.sessionRevision)],
        success: [deleteOp(lockKey)],
        failure: [],
      }),
    );
  }
}

function existing(row: LockRow, landed: boolean): TryAcquireResult {
  const { owner, ...grant } = row.lock;
  return { kind: 'granted', grant, owner, existing: !landed };
}
