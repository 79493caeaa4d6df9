/**
 * The audit trail in etcd: entries under {root}a/{seq} and a head key holding
 * the last seq and hash, the prune checkpoint and the head's seal (lock/audit/chain.ts). An append is two puts plus a compare on the head's
 * mod revision, placed in the same txn as the change it audits, so a change
 * without its entry (or two appends claiming one seq) cannot commit.
 */
import { SortOrder, SortTarget, type Etcd3, type ICompare, type IRequestOp } from 'etcd3';
import { GENESIS_HASH, type AuditSealer, type UnsealedAuditEntry } from '../../audit/chain.js';
import type { AuditEntry, Page } from '../../../contract/records.js';
import type { AuditDraft, AuditHead, AuditQuery } from '../spi.js';
import { decodeCursor, encodeCursor } from './cursors.js';
import { range, readTxn } from './etcd-client.js';
import type { KeyLayout } from './keys.js';
import { getOp, modRevisionIs, putOp, rangeResult } from './ops.js';

export interface StoredAuditHead {
  seq: number;
  hash: string;
  /** The last pruned entry (0 and the genesis hash while nothing was pruned). */
  checkpointSeq: number;
  checkpointHash: string;
  keyId?: string;
  /** null until the first append by a release that seals heads. */
  seal: string | null;
  /** '0' while the trail is empty (absent keys compare as revision 0). */
  modRevision: string;
}

/** The head key's value (keyId and seal absent when written by a release before head seals). */
interface HeadValue {
  seq: number;
  hash: string;
  keyId?: string;
  seal?: string;
}

export interface PlannedAppend {
  entry: AuditEntry;
  compare: ICompare;
  ops: IRequestOp[];
}

const CHAIN_PAGE = 500;

/** The head and the checkpoint, read at one revision. */
export async function readAuditHead(client: Etcd3, keys: KeyLayout): Promise<StoredAuditHead> {
  const response = await readTxn(client, { compare: [], success: [getOp(keys.auditHead), getOp(keys.auditCheckpoint)], failure: [] });
  const headKv = rangeResult(response, 0);
  const checkpointKv = rangeResult(response, 1);
  const checkpoint = checkpointKv ? (JSON.parse(checkpointKv.value.toString('utf8')) as { seq: number; hash: string }) : { seq: 0, hash: GENESIS_HASH };
  if (!headKv) return { seq: 0, hash: GENESIS_HASH, checkpointSeq: checkpoint.seq, checkpointHash: checkpoint.hash, seal: null, modRevision: '0' };
  const stored = JSON.parse(headKv.value.toString('utf8')) as HeadValue;
  return {
    seq: stored.seq,
    hash: stored.hash,
    checkpointSeq: checkpoint.seq,
    checkpointHash: checkpoint.hash,
    ...(stored.keyId !== undefined ? { keyId: stored.keyId } : {}),
    seal: stored.seal ?? null,
    modRevision: String(headKv.mod_revision),
  };
}

/** The SPI's view of the head: what verification compares the chain with. */
export function publicHead(head: StoredAuditHead): AuditHead {
  return {
    lastId: String(head.seq),
    lastHash: head.hash,
    checkpointId: String(head.checkpointSeq),
    checkpointHash: head.checkpointHash,
    ...(head.keyId !== undefined ? { keyId: head.keyId } : {}),
    seal: head.seal,
  };
}

/**
 * `at` is the answering server's clock (etcd has none to offer): advisory, like
 * every instant in etcd records. The chain order is the seq, not `at`. The new head is sealed
 * (with the checkpoint `head` carries: a prune passes the moved one).
 */
export function planAuditAppend(
  keys: KeyLayout,
  sealer: AuditSealer,
  head: StoredAuditHead,
  at: number,
  draft: AuditDraft,
  fields: Pick<UnsealedAuditEntry, 'action' | 'target' | 'fencingToken' | 'outcome'>,
): PlannedAppend {
  const seq = head.seq + 1;
  const entry = sealer.seal(head.hash, {
    id: String(seq),
    at,
    actor: draft.actor,
    ...(draft.actorScope !== undefined ? { actorScope: [...draft.actorScope] } : {}),
    action: fields.action,
    target: fields.target,
    fencingToken: fields.fencingToken,
    reason: draft.reason,
    outcome: fields.outcome,
    requestId: draft.requestId,
  });
  const sealed = sealer.sealHead({
    lastId: entry.id,
    lastHash: entry.hash,
    checkpointId: String(head.checkpointSeq),
    checkpointHash: head.checkpointHash,
  });
  const value: HeadValue = { seq, hash: entry.hash, ...sealed };
  return {
    entry,
    compare: modRevisionIs(keys.auditHead, head.modRevision),
    ops: [putOp(keys.auditEntry(seq), Buffer.from(JSON.stringify(entry))), putOp(keys.auditHead, Buffer.from(JSON.stringify(value)))],
  };
}

/**
 * The last entry of the oldest run (after the checkpoint, up to the head) whose `at` is before
 * `before`, or null when the oldest kept entry is not older than that.
 */
export async function lastPrunable(client: Etcd3, keys: KeyLayout, head: StoredAuditHead, before: number): Promise<AuditEntry | null> {
  let last: AuditEntry | null = null;
  for await (const entry of readAuditChain(client, keys, head.checkpointSeq + 1)) {
    if (Number(entry.id) > head.seq || entry.at >= before) break;
    last = entry;
  }
  return last;
}

/** Deletes every entry up to and including `seq` (one range delete) and records it as the checkpoint. */
export function pruneOps(keys: KeyLayout, checkpoint: { seq: number; hash: string }): IRequestOp[] {
  return [
    { request_delete_range: { key: keys.auditPrefix, range_end: keys.auditEntry(checkpoint.seq + 1) } },
    putOp(keys.auditCheckpoint, Buffer.from(JSON.stringify(checkpoint))),
  ];
}

/**
 * After a txn whose outcome is unknown (connection broke): was this entry appended?
 * The head names the last entry; ours is applied when that entry is ours.
 */
export async function wasAppended(client: Etcd3, keys: KeyLayout, planned: AuditEntry): Promise<boolean> {
  const response = await range(client, { key: keys.auditEntry(Number(planned.id)) });
  const kv = response.kvs[0];
  if (!kv) return false;
  const stored = JSON.parse(kv.value.toString('utf8')) as AuditEntry;
  return stored.hash === planned.hash;
}

/** Newest first, with optional exact-match filters; the cursor is the id of the last entry of the previous page. */
export async function listAudit(client: Etcd3, keys: KeyLayout, query: AuditQuery): Promise<Page<AuditEntry>> {
  const matches = (entry: AuditEntry): boolean =>
    (query.actor === undefined || entry.actor === query.actor) &&
    (query.action === undefined || entry.action === query.action) &&
    (query.target === undefined || entry.target === query.target);
  const cursor = decodeCursor(query.cursor, /^[1-9][0-9]{0,15}$/);
  let end = cursor ? keys.auditEntry(Number(cursor)) : keys.auditEntry(Number.MAX_SAFE_INTEGER);
  const items: AuditEntry[] = [];
  for (;;) {
    const response = await range(client, {
      key: keys.auditPrefix,
      range_end: end,
      sort_order: SortOrder.Descend,
      sort_target: SortTarget.Key,
      limit: CHAIN_PAGE,
    });
    for (const kv of response.kvs) {
      const entry = JSON.parse(kv.value.toString('utf8')) as AuditEntry;
      if (!matches(entry)) continue;
      if (items.length === query.limit) return { items, nextCursor: encodeCursor(items[items.length - 1]!.id) };
      items.push(entry);
    }
    const last = response.kvs[response.kvs.length - 1];
    if (!response.more || !last) return { items, nextCursor: null };
    end = last.key;
  }
}

export async function* readAuditChain(client: Etcd3, keys: KeyLayout, fromSeq = 0): AsyncIterable<AuditEntry> {
  let from = fromSeq > 0 ? keys.auditEntry(fromSeq) : keys.auditPrefix;
  const end = keys.auditEntry(Number.MAX_SAFE_INTEGER);
  for (;;) {
    const response = await range(client, { key: from, range_end: end, limit: CHAIN_PAGE, sort_order: SortOrder.Ascend, sort_target: SortTarget.Key });
    for (const kv of response.kvs) yield JSON.parse(kv.value.toString('utf8')) as AuditEntry;
    const last = response.kvs[response.kvs.length - 1];
    if (!response.more || !last) return;
    from = Buffer.concat([last.key, Buffer.from([0])]);
  }
}
