/**
 * The audit trail in etcd: entries under {root}a/{seq} and a head key holding
 * the last seq and hash. An append is two puts plus a compare on the head's
 * mod revision, placed in the same txn as the change it audits, so a change
 * without its entry (or two appends claiming one seq) cannot commit.
 */
import { SortOrder, SortTarget, type Etcd3, type ICompare, type IRequestOp } from 'etcd3';
import { GENESIS_HASH, type AuditSealer, type UnsealedAuditEntry } from '../../audit/chain.js';
import type { AuditEntry, Page } from '../../../contract/records.js';
import type { AuditDraft, AuditHead, AuditQuery } from '../spi.js';
import { decodeCursor, encodeCursor } from './cursors.js';
import { range } from './etcd-client.js';
import type { KeyLayout } from './keys.js';
import { modRevisionIs, putOp } from './ops.js';

export interface StoredAuditHead {
  seq: number;
  hash: string;
  /** '0' while the trail is empty (absent keys compare as revision 0). */
  modRevision: string;
}

export interface PlannedAppend {
  entry: AuditEntry;
  compare: ICompare;
  ops: IRequestOp[];
}

const CHAIN_PAGE = 500;

export async function readAuditHead(client: Etcd3, keys: KeyLayout): Promise<StoredAuditHead> {
  const response = await range(client, { key: keys.auditHead });
  const kv = response.kvs[0];
  if (!kv) return { seq: 0, hash: GENESIS_HASH, modRevision: '0' };
  const stored = JSON.parse(kv.value.toString('utf8')) as { seq: number; hash: string };
  return { seq: stored.seq, hash: stored.hash, modRevision: String(kv.mod_revision) };
}

/** The SPI's view of the head: what verification compares the chain with. */
export function publicHead(head: StoredAuditHead): AuditHead {
  return { lastId: String(head.seq), lastHash: head.hash };
}

/**
 * `at` is the answering server's clock (etcd has none to offer): advisory, like
 * every instant in etcd records. The chain order is the seq, not `at`.
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
    action: fields.action,
    target: fields.target,
    fencingToken: fields.fencingToken,
    reason: draft.reason,
    outcome: fields.outcome,
    requestId: draft.requestId,
  });
  return {
    entry,
    compare: modRevisionIs(keys.auditHead, head.modRevision),
    ops: [
      putOp(keys.auditEntry(seq), Buffer.from(JSON.stringify(entry))),
      putOp(keys.auditHead, Buffer.from(JSON.stringify({ seq, hash: entry.hash }))),
    ],
  };
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

export async function* readAuditChain(client: Etcd3, keys: KeyLayout): AsyncIterable<AuditEntry> {
  let from = keys.auditPrefix;
  const end = keys.auditEntry(Number.MAX_SAFE_INTEGER);
  for (;;) {
    const response = await range(client, { key: from, range_end: end, limit: CHAIN_PAGE, sort_order: SortOrder.Ascend, sort_target: SortTarget.Key });
    for (const kv of response.kvs) yield JSON.parse(kv.value.toString('utf8')) as AuditEntry;
    const last = response.kvs[response.kvs.length - 1];
    if (!response.more || !last) return;
    from = Buffer.concat([last.key, Buffer.from([0])]);
  }
}
