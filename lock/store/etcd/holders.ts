/**
 * Multi-holder keys on etcd (spi.ts "Multi-holder keys": shared locks and semaphores): their
 * records, and how a key's live grants are read.
 *
 * A mutex keeps its one record at {root}l/{key} exactly as before, so its hot path reads and writes
 * nothing more. A key granted shared or with limit > 1 keeps instead (keys.ts):
 *   {root}l/{key}               the key's anchor, {"anchor":1,"mode":…,"limit":…}: unleased, no token;
 *                               every grant on the key rewrites it in the grant's own txn
 *   {root}l/{key}\0{sessionId}  one record per grant (a StoredLock with mode and limit) on a lease of its
 *                               TTL bucket: live while it exists and its session incarnation is live, as a
 *                               mutex's l/ key; its create revision × 1000 + slot is the grant's token
 *   {root}lr/{sessionId}/{key}  the grant record, as for a mutex (same create revision as its l/ key)
 *
 * Why an anchor: admission counts the key's live grants, and a txn compares keys, not counts. A
 * grant's txn compares the anchor's mod revision as its decision read it, and every grant rewrites
 * the anchor, so two grants decided on one reading cannot both land. A grant ends (release, revoke,
 * lapse, session end) without touching the anchor: an end can only make a reading count too many
 * holders, never admit too many. Keyed by session, a grant's key makes "one grant per session per
 * key" a compare of its own (the key absent).
 *
 * An anchor outlives its last grant only until someone notices: the end of a grant drops it when no
 * grant key is left under it (dropAnchorIfEmpty), and an attempt finding it with no live grant takes
 * the key over (a mutex deletes it first: its token is the l/ key's create revision).
 */
import type { IKeyValue } from 'etcd3';
import { CompareResult, CompareTarget, type ICompare } from 'etcd3';
import type { LockMode } from '../../../contract/records.js';
import type { HeldLock } from '../spi.js';
import { describeKey } from '../multi-holder.js';
import type { EtcdContext } from './etcd-context.js';
import type { KeyLayout } from './keys.js';
import { deleteOp, prefixRange } from './ops.js';
import { decodeLock, type LockRow } from './records.js';

/** What an attempt asks to hold (contract/wire-rules.ts holdingOf), and what an anchor records. */
export interface Holding {
  mode: LockMode;
  limit: number;
}

export { isMutex } from '../../../contract/wire-rules.js';

const ANCHOR_PREFIX = '{"anchor":';

export function encodeAnchor(holding: Holding): Buffer {
  return Buffer.from(`${ANCHOR_PREFIX}1,"mode":${JSON.stringify(holding.mode)},"limit":${holding.limit}}`);
}

/** Whether a record at {root}l/{key} is an anchor (else it is a mutex grant). */
export function isAnchor(kv: IKeyValue): boolean {
  return kv.value.length >= ANCHOR_PREFIX.length && kv.value.subarray(0, ANCHOR_PREFIX.length).toString('latin1') === ANCHOR_PREFIX;
}

/** The key whose existence makes a grant (or its record) live: the l/ key of a mutex, the grant's own key of a multi-holder key. */
export function livenessKey(keys: KeyLayout, row: LockRow): Buffer {
  return row.stored.mode !== undefined ? keys.holder(row.lock.key, row.stored.sessionId) : keys.lock(row.lock.key);
}

/** The grants (read under {root}l/{key}\0) whose session incarnation is live now, lowest token first. */
export async function liveHolders(ctx: EtcdContext, key: string, kvs: readonly IKeyValue[]): Promise<LockRow[]> {
  const rows = kvs.map((kv) => decodeLock(key, kv));
  const live = await Promise.all(rows.map((row) => ctx.sessionIncarnationLive(row.stored.sessionId, row.stored.sessionRevision)));
  return rows.filter((_, index) => live[index]).sort(byToken);
}

/** A multi-holder key as reads describe it (multi-holder.ts describeKey): its lowest-token live grant, with every live grant. */
export function describeHolders(live: readonly LockRow[]): HeldLock | null {
  return describeKey(live.map((row) => row.lock));
}

export function byToken(a: LockRow, b: LockRow): number {
  const [x, y] = [BigInt(a.lock.fencingToken), BigInt(b.lock.fencingToken)];
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * Deletes the key's anchor when no grant key is left under it (whatever ran out or ended them),
 * in one txn: a grant landing meanwhile creates a grant key, which fails the compare.
 */
export async function dropAnchorIfEmpty(ctx: EtcdContext, key: string): Promise<void> {
  const lockKey = ctx.keys.lock(key);
  const compare: ICompare[] = [
    // The record is an anchor (a mutex record begins {"slot" or {"sessionId").
    { key: lockKey, target: CompareTarget.Value, result: CompareResult.Greater, value: Buffer.from(ANCHOR_PREFIX) },
    { key: lockKey, target: CompareTarget.Value, result: CompareResult.Less, value: Buffer.from(`${ANCHOR_PREFIX}~`) },
    // No key under the holders prefix (an empty range compares as one absent key: create revision 0).
    { ...prefixRange(ctx.keys.holdersOf(key)), target: CompareTarget.Create, result: CompareResult.Less, create_revision: '1' },
  ];
  await ctx.write(() => ctx.etcd().kv.txn({ compare, success: [deleteOp(lockKey, false)], failure: [] }));
}
