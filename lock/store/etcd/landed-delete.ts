/**
 * Did a holder's own delete land whose first answer was lost? Releases and closes are resent through
 * unavailability (an election, a deadline): when the first txn was applied but its answer never came,
 * the resend's compare finds the thing gone and would answer LOCK_LOST ("your lock ended under you")
 * or SESSION_NOT_FOUND to the holder whose own write ended it — and count a loss that was none.
 *
 * etcd keeps every key's history until a compaction, so the answer is read there. The primary key
 * (a grant's liveness key; a session's record) of the incarnation created at revision C was deleted at
 * some revision D (endOfIncarnation). The holder's write deletes it together with a companion (the
 * grant's record; the session's liveness key) in one txn, so both vanish at D. What else ends them
 * does not: a lapse deletes the liveness key alone (its lease ran out) and leaves the record to the
 * sweeper, which deletes it later; an operator's revoke or kill deletes both but appends to the audit
 * chain in the same txn, so the audit head moves at D. Both gone at D with no audit append at D is
 * the holder's own write — this call's, or a concurrent one of the same holder; either way the holder
 * ended it. A compacted history answers "not landed", and the caller answers as it did without this.
 */
import type { Etcd3, IKeyValue } from 'etcd3';
import { range } from './etcd-client.js';

export interface LandedDeleteQuery {
  /** The key whose incarnation ended: a grant's liveness key, a session's record. */
  key: Buffer;
  /** That incarnation's create revision. */
  createRevision: bigint;
  /** The key the holder's write deletes in the same txn, with its incarnation's create revision. */
  companion: { key: Buffer; createRevision: bigint };
  auditHead: Buffer;
  /** A revision at which `key` is known to be gone (the failed resend's header). */
  goneBy: bigint;
}

/** The primary key's last value before the holder's own write deleted it, or null when no such write is on record. */
export async function landedDelete(client: Etcd3, query: LandedDeleteQuery): Promise<IKeyValue | null> {
  try {
    return await findDelete(client, query);
  } catch (error) {
    if (error instanceof Error && /compacted/i.test(error.message)) return null;
    throw error;
  }
}

type ReadAt = (key: Buffer, revision: bigint) => Promise<IKeyValue | undefined>;
const incarnationOf = (createRevision: bigint) => (kv: IKeyValue | undefined): boolean =>
  kv !== undefined && BigInt(kv.create_revision) === createRevision;

async function findDelete(client: Etcd3, query: LandedDeleteQuery): Promise<IKeyValue | null> {
  const at: ReadAt = async (key, revision) => (await range(client, { key, revision: revision.toString() })).kvs[0];
  const ended = await endOfIncarnation(query, at);
  if (!ended) return null;
  const isCompanion = incarnationOf(query.companion.createRevision);
  const [lastValue, companionBefore, companionAfter, head] = await Promise.all([
    at(query.key, ended.live),
    at(query.companion.key, ended.live),
    at(query.companion.key, ended.gone),
    at(query.auditHead, ended.gone),
  ]);
  const deletedTogether = isCompanion(companionBefore) && companionAfter === undefined;
  const byOperator = head !== undefined && BigInt(head.mod_revision) === ended.gone;
  return deletedTogether && !byOperator ? (lastValue ?? null) : null;
}

/**
 * The revision that ended the incarnation (`gone`) and the one before it (`live`); null when the key at
 * `goneBy` is still that incarnation, or never was. Gallops back from `goneBy` before bisecting: the
 * deletion is seconds old, so the revisions read are recent ones, which a compaction keeps however old
 * the incarnation is. Once gone it never comes back (a re-creation has a later create revision).
 */
async function endOfIncarnation({ key, createRevision, goneBy }: LandedDeleteQuery, at: ReadAt): Promise<{ live: bigint; gone: bigint } | null> {
  const isIncarnation = incarnationOf(createRevision);
  if (isIncarnation(await at(key, goneBy))) return null;
  let gone = goneBy;
  let live: bigint;
  for (let step = 1n; ; step *= 2n) {
    const probe = gone - step > createRevision ? gone - step : createRevision;
    if (isIncarnation(await at(key, probe))) {
      live = probe;
      break;
    }
    if (probe === createRevision) return null;
    gone = probe;
  }
  while (gone - live > 1n) {
    const middle = live + (gone - live) / 2n;
    if (isIncarnation(await at(key, middle))) live = middle;
    else gone = middle;
  }
  return { live, gone };
}
