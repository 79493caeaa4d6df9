/**
 * Audit retention (issue 25): export the trail as JSON lines an outsider can re-verify, and prune
 * its oldest entries behind a sealed checkpoint.
 *
 * Export format (one JSON object a line, `application/x-ndjson`):
 *   {"checkpoint":{"id":"…","hash":"…"}}   the last pruned entry ("0" and the genesis hash if none)
 *   {…AuditEntry…}                         every kept entry, oldest first, with prevHash, hash, keyId
 *   {"head":{…AuditHead…}}                 the recorded head the export stops at, with its seal
 * The head is read first and the walk stops at it, as verify does. `verifyAuditExport` re-verifies
 * such a file: the links from the checkpoint on (an unkeyed trail's SHA-256 hashes too; a keyed
 * trail's HMACs and head seal only with the key ring).
 */
import type { AuditEntry } from '../../contract/records.js';
import type { AuditDraft, AuditHead, LockStore, PruneAuditResult } from '../store/spi.js';
import { createAuditSealer, verifyAuditChain, type AuditSealer, type ChainVerification } from './chain.js';

export type AuditExportLine = { checkpoint: { id: string; hash: string } } | AuditEntry | { head: AuditHead };

export type AuditTrailStore = Pick<LockStore, 'readAuditHead' | 'readAuditChain' | 'pruneAudit'>;

/** The export's lines, head read first (entries appended during the export are left for the next one). */
export async function* exportAuditTrail(store: AuditTrailStore): AsyncIterable<AuditExportLine> {
  const { witnessed: _witnessed, ...head } = await store.readAuditHead();
  yield { checkpoint: { id: head.checkpointId, hash: head.checkpointHash } };
  const checkpointId = BigInt(head.checkpointId);
  const lastId = BigInt(head.lastId);
  for await (const entry of store.readAuditChain()) {
    const id = BigInt(entry.id);
    if (id <= checkpointId) continue;
    if (id > lastId) break;
    yield entry;
  }
  yield { head };
}

/** Re-verifies an export (parsed lines, in order). With the key ring, HMACs and the head's seal are checked. */
export async function verifyAuditExport(lines: readonly AuditExportLine[], sealer?: AuditSealer): Promise<ChainVerification> {
  const first = lines[0];
  const last = lines.at(-1);
  if (!first || !('checkpoint' in first) || !last || !('head' in last)) {
    return { ok: false, entries: 0, brokenAt: '0', problem: 'an export starts with its checkpoint line and ends with its head line' };
  }
  const head = last.head;
  if (head.checkpointId !== first.checkpoint.id || head.checkpointHash !== first.checkpoint.hash) {
    return { ok: false, entries: 0, brokenAt: first.checkpoint.id, problem: 'the checkpoint line does not match the head it ends with' };
  }
  const entries = lines.slice(1, -1) as AuditEntry[];
  const keyed = entries.some((entry) => entry.keyId !== undefined) || head.keyId !== undefined;
  return verifyAuditChain(entries, { head, sealer: sealer ?? (keyed ? linksOnly : createAuditSealer()) });
}

/**
 * Without the key, an outsider can still prove a keyed export is one unbroken chain — each entry's
 * prevHash is the hash before it, from the checkpoint to the head, nothing missing — but not that
 * the hashes are the key's (anyone can write a linked chain): the CLI says which was checked.
 */
const linksOnly: AuditSealer = {
  keyed: false,
  keyId: undefined,
  hash: (_prevHash, entry) => (entry as AuditEntry).hash,
  seal: () => {
    throw new Error('a links-only check seals nothing');
  },
  check: () => null,
  sealHead: () => {
    throw new Error('a links-only check seals nothing');
  },
  checkHead: () => null,
};

export interface PruneRequest {
  /** Entries whose `at` (store clock, epoch milliseconds) is before this are pruned. */
  before: number;
  audit: AuditDraft;
}

export function pruneAuditTrail(store: AuditTrailStore, request: PruneRequest): Promise<PruneAuditResult> {
  return store.pruneAudit({ before: request.before, audit: request.audit });
}
