/**
 * The JSON values stored at session and lock keys, and their translation to
 * SPI records. The fencing token is not stored: it is the lock key's create
 * revision (its grant record shares it), which etcd assigns and nobody can write,
 * × 1000 + the grant's slot in its txn, which is stored (grant-tokens.ts).
 *
 * Instants here (createdAt, lastHeartbeatAt, expiresAt, grantedAt) are advisory:
 * the answering server's clock when it wrote them. Liveness never reads them;
 * it is the existence of leased keys.
 */
import type { IKeyValue } from 'etcd3';
import { MUTEX, type LockGrant, type LockMode } from '../../../contract/records.js';
import type { HeldLock, SessionRecord } from '../spi.js';
import { grantToken, slotPrefix } from './grant-tokens.js';

export interface StoredSession extends SessionRecord {
  /** SHA-256 (hex) of the session's bearer token; never the token itself. */
  tokenHash: string;
  /** etcd lease id (decimal string) the session's liveness key is attached to. */
  leaseId: string;
}

export interface StoredLock {
  /**
   * The grant's position in the txn that created it (fixed width, see grant-tokens.ts).
   * Written first in the value, so compares can pin it. Absent on records from before slots.
   */
  slot?: string;
  sessionId: string;
  /** Create revision of the holder session's liveness key: which incarnation holds it. */
  sessionRevision: string;
  owner: string;
  ttlMillis: number;
  grantedAt: number;
  expiresAt: number;
  /** The lease the liveness key sits on (shared within a TTL bucket). */
  leaseId: string;
  /** Unique per write: tells a call whose txn outcome was unknown whether its own write landed. */
  writeId: string;
  /** The holder's value (issue 23): written with the grant, replaced by a proclaim. */
  value?: string;
  /**
   * A grant of a multi-holder key (holders.ts): its mode and the key's limit. Absent on a mutex grant,
   * whose record is the one at {root}l/{key} (a mutex record is written exactly as before).
   */
  mode?: LockMode;
  limit?: number;
}

/** A new grant's stored form (a mutex's; a multi-holder grant adds its mode and limit). */
export function newGrantRecord(g: {
  slot: string;
  session: SessionRow;
  attempt: { ttlMillis: number; value?: string };
  leaseId: string;
  writeId: string;
  now: number;
}): StoredLock {
  return {
    slot: g.slot,
    sessionId: g.session.session.sessionId,
    sessionRevision: g.session.createRevision,
    owner: g.session.session.owner,
    ttlMillis: g.attempt.ttlMillis,
    grantedAt: g.now,
    expiresAt: g.now + g.attempt.ttlMillis,
    leaseId: g.leaseId,
    writeId: g.writeId,
    ...(g.attempt.value !== undefined ? { value: g.attempt.value } : {}),
  };
}

/** The grant a try hands back once its txn committed: the token is the commit's revision × 1000 + the grant's slot. */
export function committedGrant(g: {
  attempt: { key: string; ttlMillis: number; value?: string };
  sessionId: string;
  revision: string;
  slot: string;
  now: number;
  holding: { mode: LockMode; limit: number };
}): LockGrant {
  return {
    key: g.attempt.key,
    sessionId: g.sessionId,
    fencingToken: grantToken(g.revision, g.slot),
    ttlMillis: g.attempt.ttlMillis,
    grantedAt: g.now,
    expiresAt: g.now + g.attempt.ttlMillis,
    mode: g.holding.mode,
    limit: g.holding.limit,
    ...(g.attempt.value !== undefined ? { value: g.attempt.value } : {}),
  };
}

/** A lock as read from etcd (liveness key or grant record): its record plus the revisions the store compares on. */
export interface LockRow {
  lock: HeldLock;
  stored: StoredLock;
  /** The revision that created this incarnation of the key (and its grant record): what compares pin. */
  createRevision: string;
  modRevision: string;
}

/** A session as read from etcd, with the revisions that identify this incarnation of it. */
export interface SessionRow {
  session: StoredSession;
  createRevision: string;
  modRevision: string;
}

export function encode(value: StoredSession | StoredLock): Buffer {
  if ('slot' in value && value.slot !== undefined) {
    // The slot leads the value whatever the object's key order: slotIs() compares that prefix.
    const { slot, ...rest } = value;
    return Buffer.from(`${slotPrefix(slot)},${JSON.stringify(rest).slice(1)}`);
  }
  return Buffer.from(JSON.stringify(value));
}

export function decodeSession(kv: IKeyValue): SessionRow {
  const stored = JSON.parse(kv.value.toString('utf8')) as StoredSession;
  return { session: stored, createRevision: String(kv.create_revision), modRevision: String(kv.mod_revision) };
}

export function decodeLock(key: string, kv: IKeyValue): LockRow {
  const stored = JSON.parse(kv.value.toString('utf8')) as StoredLock;
  return {
    lock: {
      key,
      sessionId: stored.sessionId,
      owner: stored.owner,
      fencingToken: grantToken(String(kv.create_revision), stored.slot),
      ttlMillis: stored.ttlMillis,
      grantedAt: stored.grantedAt,
      expiresAt: stored.expiresAt,
      ...(stored.mode !== undefined ? { mode: stored.mode, limit: stored.limit ?? MUTEX.limit } : MUTEX),
      ...(stored.value !== undefined ? { value: stored.value } : {}),
    },
    stored,
    createRevision: String(kv.create_revision),
    modRevision: String(kv.mod_revision),
  };
}

export function toSessionRecord(stored: StoredSession): SessionRecord {
  return {
    sessionId: stored.sessionId,
    owner: stored.owner,
    ttlMillis: stored.ttlMillis,
    createdAt: stored.createdAt,
    lastHeartbeatAt: stored.lastHeartbeatAt,
    expiresAt: stored.expiresAt,
    ...(stored.openedBy !== undefined ? { openedBy: stored.openedBy } : {}),
  };
}
