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
 *
 * Issue 25:
 * - Keys rotate: a keyed entry names the key that sealed it (`keyId`, a fingerprint of the key,
 *   never the key), and the sealer is a key ring (audit-key.ts reads it from the key file: the
 *   current key first, previous ones after it), so a chain sealed partly with an old key and partly
 *   with the new one verifies end to end while the file still holds both.
 * - The recorded head (last id and hash, plus the prune checkpoint) is sealed too (`sealHead`):
 *   a database writer who deletes the newest entries and rewinds the head cannot make the head's
 *   seal match without the key. An unsealed or mis-sealed head fails verification naming the
 *   head's entry; when this process has seen a newer head (witness.ts), the missing entries are
 *   named instead.
 * - A prune deletes the oldest entries and records their last id and hash as the checkpoint, inside
 *   the sealed head: verification starts the walk from the checkpoint, so everything kept is still
 *   proved, and the checkpoint itself cannot be moved without the key.
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

/** The fields of the recorded head that its seal covers. */
export interface HeadFields {
  lastId: string;
  lastHash: string;
  /** The last pruned entry ("0" and GENESIS_HASH while nothing was pruned). */
  checkpointId: string;
  checkpointHash: string;
}

/** A head's seal and the key that made it (no keyId when the trail has no audit key). */
export interface HeadSeal {
  keyId?: string;
  seal: string;
}

/** Seals and checks chain links and the head; keyed (HMAC) when built with a key. */
export interface AuditSealer {
  readonly keyed: boolean;
  /** The key new entries and heads are sealed with; undefined when unkeyed. */
  readonly keyId: string | undefined;
  /** The link hash of `entry` after `prevHash`, with the key the entry names (or the current one). */
  hash(prevHash: string, entry: UnsealedAuditEntry): string;
  /** Stamps the current key's id on `entry` and hashes it. */
  seal(prevHash: string, entry: UnsealedAuditEntry): AuditEntry;
  /** Why `entry` does not hold after `prevHash`, or null when it does. */
  check(prevHash: string, entry: AuditEntry): string | null;
  sealHead(head: HeadFields): HeadSeal;
  /** Why the head's seal does not hold, or null when it does. */
  checkHead(head: HeadFields & { keyId?: string | undefined; seal: string | null }): string | null;
}

/** A sealer whose keys can be swapped while it is in use (the audit key file is re-read live). */
export interface AuditKeyring extends AuditSealer {
  /** The current key first, then older ones kept for verification. Ids of all of them. */
  readonly keyIds: readonly string[];
  replaceKeys(keys: readonly Buffer[]): void;
}

/** A key's public name: a fingerprint that says which key sealed an entry and reveals nothing of it. */
export function auditKeyId(key: Buffer): string {
  return createHash('sha256').update('holdfast audit key id\n').update(key).digest('hex').slice(0, 16);
}

export function createAuditKeyring(initial: readonly Buffer[] = []): AuditKeyring {
  let keys = new Map<string, Buffer>();
  let current: string | undefined;
  const replaceKeys = (next: readonly Buffer[]) => {
    const map = new Map<string, Buffer>();
    for (const key of next) map.set(auditKeyId(key), key);
    keys = map;
    current = next.length > 0 ? auditKeyId(next[0]!) : undefined;
  };
  replaceKeys(initial);

  const keyFor = (keyId: string | undefined): Buffer | undefined => (keyId === undefined ? undefined : keys.get(keyId));
  const hash = (prevHash: string, entry: UnsealedAuditEntry) => auditHash(prevHash, entry, keyFor(entry.keyId ?? current));

  return {
    get keyed() {
      return current !== undefined;
    },
    get keyId() {
      return current;
    },
    get keyIds() {
      return [...keys.keys()];
    },
    replaceKeys,
    hash,
    seal(prevHash, entry) {
      const stamped: UnsealedAuditEntry = { ...withoutKeyId(entry), ...(current !== undefined ? { keyId: current } : {}) };
      return { ...stamped, prevHash, hash: hash(prevHash, stamped) };
    },
    check(prevHash, entry) {
      if (entry.keyId !== undefined) {
        const key = keys.get(entry.keyId);
        if (!key) return `it was sealed with audit key ${entry.keyId}, which this server's key file does not hold (keep previous keys in the file after a rotation)`;
        return auditHash(prevHash, entry, key) === entry.hash ? null : `hash does not match the entry content (as sealed with audit key ${entry.keyId})`;
      }
      // Sealed before entries named their key: with the current key or one kept after it, or without one.
      if (keys.size === 0) return auditHash(prevHash, entry) === entry.hash ? null : 'hash does not match the entry content';
      for (const key of keys.values()) if (auditHash(prevHash, entry, key) === entry.hash) return null;
      return 'hash does not match the entry content (or was sealed without this audit key)';
    },
    sealHead(head) {
      const keyId = current;
      return { ...(keyId !== undefined ? { keyId } : {}), seal: headSeal(head, keyId, keyFor(keyId)) };
    },
    checkHead(head) {
      if (head.seal === null) {
        // A trail never written has nothing to rewind to.
        if (head.lastId === '0' && head.checkpointId === '0') return null;
        return `the recorded head (entry ${head.lastId}) carries no seal: it was rewritten outside Holdfast, or last written by a release before head seals (the next audited action seals it)`;
      }
      const keyId = head.keyId;
      if (keyId !== undefined && !keys.has(keyId)) {
        return `the recorded head (entry ${head.lastId}) is sealed with audit key ${keyId}, which this server's key file does not hold`;
      }
      if (keyId === undefined && keys.size > 0) {
        return `the recorded head (entry ${head.lastId}) is sealed without an audit key: it was rewritten outside Holdfast (entries after it may have been deleted)`;
      }
      if (headSeal(head, keyId, keyFor(keyId)) !== head.seal) {
        return `the recorded head (entry ${head.lastId}) does not match its seal: it was rewritten outside Holdfast (entries after it may have been deleted)`;
      }
      return null;
    },
  };
}

export function createAuditSealer(key?: Buffer): AuditKeyring {
  return createAuditKeyring(key ? [key] : []);
}

function withoutKeyId(entry: UnsealedAuditEntry): UnsealedAuditEntry {
  const { keyId: _keyId, ...rest } = entry;
  return rest;
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
    // Absent on entries sealed before keys rotated: they hash as they always did.
    keyId: entry.keyId,
    // Absent for unscoped actors (and every entry before scopes): they hash as they always did.
    actorScope: entry.actorScope,
  };
  const mac = key ? createHmac('sha256', key) : createHash('sha256');
  return mac.update(prevHash).update('\n').update(canonicalJson(body)).digest('hex');
}

function headSeal(head: HeadFields, keyId: string | undefined, key: Buffer | undefined): string {
  const body = { lastId: head.lastId, lastHash: head.lastHash, checkpointId: head.checkpointId, checkpointHash: head.checkpointHash, keyId };
  const mac = key ? createHmac('sha256', key) : createHash('sha256');
  return mac.update('holdfast audit head\n').update(canonicalJson(body)).digest('hex');
}

export function sealAuditEntry(prevHash: string, entry: UnsealedAuditEntry): AuditEntry {
  return { ...entry, prevHash, hash: auditHash(prevHash, entry) };
}

export type ChainVerification =
  | { ok: true; entries: number; headHash: string }
  | { ok: false; entries: number; brokenAt: string; problem: string };

/** The recorded head as verification reads it (lock/store/spi.ts AuditHead). */
export interface VerifiedHead {
  lastId: string;
  lastHash: string;
  /** Absent on heads from callers that know no prune: the chain then starts at genesis. */
  checkpointId?: string;
  checkpointHash?: string;
  keyId?: string;
  /** Present (null when unsealed) on heads read from a store: only then is the seal checked. */
  seal?: string | null;
  /** The newest entry this process saw committed before the head was read (witness.ts), if any. */
  witnessed?: { id: string; hash: string };
}

export interface VerifyOptions {
  /**
   * The recorded head (last id and hash), read BEFORE the chain: the walk stops at
   * it, so entries appended meanwhile are not mistaken for tampering, and a chain
   * that ends before it (the newest entries deleted) fails naming the first missing id.
   */
  head?: VerifiedHead;
  /** Checks links with this sealer (keyed when the server has an audit key); plain SHA-256 otherwise. */
  sealer?: AuditSealer;
}

const missingRange = (first: bigint, last: bigint) => (first === last ? `entry ${first} is` : `entries ${first}..${last} are`);

/** Walks entries oldest first and reports the first one whose links or hash do not hold. */
export async function verifyAuditChain(
  entries: AsyncIterable<AuditEntry> | Iterable<AuditEntry>,
  options: VerifyOptions = {},
): Promise<ChainVerification> {
  const sealer = options.sealer ?? createAuditSealer();
  const head = options.head;
  const headId = head ? BigInt(head.lastId) : undefined;
  const checkpointId = BigInt(head?.checkpointId ?? '0');
  let prev = head?.checkpointHash ?? GENESIS_HASH;
  let count = 0;
  let lastId = checkpointId;
  const witnessed = head?.witnessed;
  let witnessedHashSeen: string | undefined;
  for await (const entry of entries) {
    const id = BigInt(entry.id);
    // Pruned, or (when a prune commits during the walk) about to be: the checkpoint covers it.
    if (id <= checkpointId) continue;
    if (headId !== undefined && id > headId) break;
    count += 1;
    if (count === 1 && id !== checkpointId + 1n) {
      const first = checkpointId + 1n;
      const after = checkpointId === 0n ? 'the chain starts' : `the checkpoint is entry ${checkpointId}`;
      return { ok: false, entries: count, brokenAt: first.toString(), problem: `${after} but the oldest entry kept is ${id}: ${missingRange(first, id - 1n)} missing` };
    }
    if (entry.prevHash !== prev) {
      return { ok: false, entries: count, brokenAt: entry.id, problem: 'prevHash does not match the previous entry' };
    }
    const problem = sealer.check(prev, entry);
    if (problem) return { ok: false, entries: count, brokenAt: entry.id, problem };
    if (witnessed && entry.id === witnessed.id) witnessedHashSeen = entry.hash;
    prev = entry.hash;
    lastId = id;
  }
  if (head && headId !== undefined) {
    if (lastId < headId) {
      const first = lastId + 1n;
      return {
        ok: false,
        entries: count,
        brokenAt: first.toString(),
        problem: `the chain ends at entry ${lastId} but the recorded head is entry ${head.lastId}: ${missingRange(first, headId)} missing`,
      };
    }
    if (witnessed && BigInt(witnessed.id) > headId) {
      const first = headId + 1n;
      return {
        ok: false,
        entries: count,
        brokenAt: first.toString(),
        problem: `the recorded head is entry ${head.lastId} but this server saw entry ${witnessed.id} committed: ${missingRange(first, BigInt(witnessed.id))} missing (deleted, and the head rewound)`,
      };
    }
    if (witnessed && witnessedHashSeen !== undefined && witnessedHashSeen !== witnessed.hash) {
      return {
        ok: false,
        entries: count,
        brokenAt: witnessed.id,
        problem: `entry ${witnessed.id} is not the entry this server saw committed: the chain was rewritten from there on`,
      };
    }
    if (prev !== head.lastHash) {
      return { ok: false, entries: count, brokenAt: head.lastId, problem: 'the last entry does not match the recorded head hash' };
    }
    if (head.seal !== undefined) {
      const problem = sealer.checkHead({
        lastId: head.lastId,
        lastHash: head.lastHash,
        checkpointId: head.checkpointId ?? '0',
        checkpointHash: head.checkpointHash ?? GENESIS_HASH,
        ...(head.keyId !== undefined ? { keyId: head.keyId } : {}),
        seal: head.seal,
      });
      if (problem) return { ok: false, entries: count, brokenAt: head.lastId, problem };
    }
  }
  return { ok: true, entries: count, headHash: prev };
}
