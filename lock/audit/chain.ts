/**
 * The audit trail's hash chain: each entry's hash is sha-256 over the previous
 * entry's hash and the entry's canonical JSON, so altering, inserting or
 * deleting any entry breaks every hash after it. Stores seal entries with an
 * AuditSealer inside the transaction that appends; `verifyAuditChain` names the
 * first entry that does not match, and compares the end of the chain with the
 * recorded head so that deleting the newest entries is caught too.
 *
 * With a key (HOLDFAST_AUDIT_KEY_FILE) the link is HMAC-SHA-256 instead of plain
 * SHA-256: someone with write access to the database but not the key cannot
 * recompute a chain they altered.
 */
import { createHash, createHmac } from 'node:crypto';
import type { AuditEntry } from '../../contract/records.js';

export const GENESIS_HASH = '0'.repeat(64);

export type UnsealedAuditEntry = Omit<AuditEntry, 'prevHash' | 'hash'>;

/** JSON with keys sorted and undefined fields omitted, so equal entries hash equally everywhere. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** Seals and checks chain links; keyed (HMAC) when built with a key. */
export interface AuditSealer {
  readonly keyed: boolean;
  hash(prevHash: string, entry: UnsealedAuditEntry): string;
  seal(prevHash: string, entry: UnsealedAuditEntry): AuditEntry;
}

export function createAuditSealer(key?: Buffer): AuditSealer {
  const hash = (prevHash: string, entry: UnsealedAuditEntry) => auditHash(prevHash, entry, key);
  return { keyed: key !== undefined, hash, seal: (prevHash, entry) => ({ ...entry, prevHash, hash: hash(prevHash, entry) }) };
}

export function auditHash(prevHash: string, entry: UnsealedAuditEntry, key?: Buffer): string {
  const body: UnsealedAuditEntry = {
    id: entry.id,
    at: entry.at,
    actor: entry.actor,
    action: entry.action,
    target: entry.target,
    fencingToken: entry.fencingToken,
    reason: entry.reason,
    outcome: entry.outcome,
    requestId: entry.requestId,
  };
  const mac = key ? createHmac('sha256', key) : createHash('sha256');
  return mac.update(prevHash).update('\n').update(canonicalJson(body)).digest('hex');
}

export function sealAuditEntry(prevHash: string, entry: UnsealedAuditEntry): AuditEntry {
  return { ...entry, prevHash, hash: auditHash(prevHash, entry) };
}

export type ChainVerification =
  | { ok: true; entries: number; headHash: string }
  | { ok: false; entries: number; brokenAt: string; problem: string };

export interface VerifyOptions {
  /**
   * The recorded head (last id and hash), read BEFORE the chain: the walk stops at
   * it, so entries appended meanwhile are not mistaken for tampering, and a chain
   * that ends before it (the newest entries deleted) fails naming the first missing id.
   */
  head?: { lastId: string; lastHash: string };
  /** Checks links with this sealer (keyed when the server has an audit key); plain SHA-256 otherwise. */
  sealer?: AuditSealer;
}

/** Walks entries oldest first and reports the first one whose links or hash do not hold. */
export async function verifyAuditChain(
  entries: AsyncIterable<AuditEntry> | Iterable<AuditEntry>,
  options: VerifyOptions = {},
): Promise<ChainVerification> {
  const sealer = options.sealer ?? createAuditSealer();
  const head = options.head;
  const headId = head ? BigInt(head.lastId) : undefined;
  let prev = GENESIS_HASH;
  let count = 0;
  let lastId = 0n;
  for await (const entry of entries) {
    if (headId !== undefined && BigInt(entry.id) > headId) break;
    count += 1;
    if (entry.prevHash !== prev) {
      return { ok: false, entries: count, brokenAt: entry.id, problem: 'prevHash does not match the previous entry' };
    }
    if (sealer.hash(prev, entry) !== entry.hash) {
      const how = sealer.keyed ? ' (or was sealed without this audit key)' : '';
      return { ok: false, entries: count, brokenAt: entry.id, problem: `hash does not match the entry content${how}` };
    }
    prev = entry.hash;
    lastId = BigInt(entry.id);
  }
  if (head && headId !== undefined) {
    if (lastId < headId) {
      const first = (lastId + 1n).toString();
      const missing = first === head.lastId ? `entry ${first} is` : `entries ${first}..${head.lastId} are`;
      return {
        ok: false,
        entries: count,
        brokenAt: first,
        problem: `the chain ends at entry ${lastId} but the recorded head is entry ${head.lastId}: ${missing} missing`,
      };
    }
    if (prev !== head.lastHash) {
      return { ok: false, entries: count, brokenAt: head.lastId, problem: 'the last entry does not match the recorded head hash' };
    }
  }
  return { ok: true, entries: count, headHash: prev };
}
