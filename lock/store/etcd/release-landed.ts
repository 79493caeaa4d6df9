/**
 * Did a release land whose first answer was lost? A release is retried through unavailability (an
 * election, a deadline): when the first txn was applied but its answer never came, the retry's
 * compare-and-delete finds the grant gone and would answer LOCK_LOST — "your lock ended under you" —
 * to a holder whose own release ended it, and count a lost lock that was not lost.
 *
 * etcd keeps every key's history until a compaction, so the answer is read there. The grant's
 * liveness key (created at the token's revision C, kept by renewals) was deleted at some revision D,
 * found by bisecting [C, now]. A release deletes the liveness key and the session's record of the
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

async function findRelease(client: Etcd3, { liveKey, recordKey, auditHead, createRevision, goneBy }: LandedQuery): Promise<IKeyValue | null> {
  const at = async (key: Buffer, revision: bigint): Promise<IKeyValue | undefined> =>
    (await range(client, { key, revision: revision.toString() })).kvs[0];
  const isGrant = (kv: IKeyValue | undefined): boolean => kv !== undefined && BigInt(kv.create_revision) === createRevision;
  if (!isGrant(await at(liveKey, createRevision)) || isGrant(await at(liveKey, goneBy))) return null;
  // The grant is live at `live` and gone at `gone` (once gone, never back: a re-creation has a later create revision).
  let live = createRevision;
  let gone = goneBy;
  while (gone - live > 1n) {
    const middle = live + (gone - live) / 2n;
    if (isGrant(await at(liveKey, middle))) live = middle;
    else gone = middle;
  }
  const [lastValue, recordBefore, recordAfter, head] = await Promise.all([
    at(liveKey, live),
    at(recordKey, live),
    at(recordKey, gone),
    at(auditHead, gone),
  ]);
  const deletedTogether = isGrant(recordBefore) && recordAfter === undefined;
  const byOperator = head !== undefined && BigInt(head.mod_revision) === gone;
  return deletedTogether && !byOperator ? (lastValue ?? null) : null;
}
