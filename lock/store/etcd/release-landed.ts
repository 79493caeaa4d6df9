/**
 * Did a release land whose first answer was lost? A release is retried through unavailability (an
 * election, a deadline): when the first txn was applied but its answer never came, the retry's
 * compare-and-delete finds the grant gone and would answer LOCK_LOST — "your lock ended under you" —
 * to a holder whose own release ended it, and count a lost lock that was not lost.
 *
 * etcd keeps every key's history until a compaction, so the answer is read there. The grant's
 * liveness key (created at the token's revision C, kept by renewals) was deleted at some revision D
 * (endOfGrant). A release deletes the liveness key and the session's record of the
 * grant in one txn, so both vanish at D; a lapse (its lease ran out, or an acquirer took the key over)
 * deletes the liveness key alone and leaves the record to the sweeper, and an operator's revoke
 * deletes both but appends to the audit chain in the same txn (the head moves at D). So: both gone at
 * D and the audit head not written at D is this session's release of that grant — this call's, or a
 * concurrent one of the same holder, and either way the holder ended it. A compacted history answers
 * "not landed", and the caller answers LOCK_LOST as it did without this check.
 */
import type { Etcd3, IKeyValue } from 'etcd3';
import { range } from './etcd-client.js';

export interface LandedQuery {
  /** The grant's liveness key: the lock key of a mutex, the session's holder key of a multi-holder key. */
  liveKey: Buffer;
  /** The session's record of the grant: created with the liveness key, deleted with it by a release. */
  recordKey: Buffer;
  auditHead: Buffer;
  /** The create revision the token names. */
  createRevision: bigint;
  /** A revision at which the grant is known to be gone (the failed retry's header). */
  goneBy: bigint;
}

/** The grant's last value before a release deleted it, or null when no release of it is on record. */
export async function releaseLanded(client: Etcd3, query: LandedQuery): Promise<IKeyValue | null> {
  try {
    return await findRelease(client, query);
  } catch (error) {
    if (error instanceof Error && /compacted/i.test(error.message)) return null;
    throw error;
  }
}

type ReadAt = (key: Buffer, revision: bigint) => Promise<IKeyValue | undefined>;

async function findRelease(client: Etcd3, query: LandedQuery): Promise<IKeyValue | null> {
  const at: ReadAt = async (key, revision) => (await range(client, { key, revision: revision.toString() })).kvs[0];
  const isGrant = (kv: IKeyValue | undefined): boolean => kv !== undefined && BigInt(kv.create_revision) === query.createRevision;
  const ended = await endOfGrant(query, at, isGrant);
  if (!ended) return null;
  const { liveKey, recordKey, auditHead } = query;
  const [lastValue, recordBefore, recordAfter, head] = await Promise.all([
    at(liveKey, ended.live),
    at(recordKey, ended.live),
    at(recordKey, ended.gone),
    at(auditHead, ended.gone),
  ]);
  const deletedTogether = isGrant(recordBefore) && recordAfter === undefined;
  const byOperator = head !== undefined && BigInt(head.mod_revision) === ended.gone;
  return deletedTogether && !byOperator ? (lastValue ?? null) : null;
}

/**
 * The revision that ended the grant's liveness key (`gone`) and the one before it (`live`); null when
 * the key at `goneBy` is still the grant, or was never it. Gallops back from `goneBy` before bisecting:
 * the deletion is seconds old, so the revisions read are recent ones, which a compaction keeps however
 * old the grant is. Once gone the grant never comes back (a re-creation has a later create revision).
 */
async function endOfGrant(
  { liveKey, createRevision, goneBy }: LandedQuery,
  at: ReadAt,
  isGrant: (kv: IKeyValue | undefined) => boolean,
): Promise<{ live: bigint; gone: bigint } | null> {
  if (isGrant(await at(liveKey, goneBy))) return null;
  let gone = goneBy;
  let live: bigint;
  for (let step = 1n; ; step *= 2n) {
    const probe = gone - step > createRevision ? gone - step : createRevision;
    if (isGrant(await at(liveKey, probe))) {
      live = probe;
      break;
    }
    if (probe === createRevision) return null;
    gone = probe;
  }
  while (gone - live > 1n) {
    const middle = live + (gone - live) / 2n;
    if (isGrant(await at(liveKey, middle))) live = middle;
    else gone = middle;
  }
  return { live, gone };
}
