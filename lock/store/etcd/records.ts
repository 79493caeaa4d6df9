/**
 * The JSON values stored at session and lock keys, and their translation to
 * SPI records. The fencing token is not stored: it is the lock key's create
 * revision, which etcd assigns and nobody can write.
 */
import type { IKeyValue } from 'etcd3';
import type { HeldLock, SessionRecord } from '../spi.js';

export interface StoredSession extends SessionRecord {
  /** etcd lease id (decimal string) every key of this session is attached to. */
  leaseId: string;
}

export interface StoredLock {
  sessionId: string;
  owner: string;
  ttlMillis: number;
  grantedAt: number;
  expiresAt: number;
}

/** A lock as read from etcd: its record plus the revisions the store compares on. */
export interface LockRow {
  lock: HeldLock;
  modRevision: string;
  leaseId: string;
}

/** A session as read from etcd, with the revisions that identify this incarnation of it. */
export interface SessionRow {
  session: StoredSession;
  createRevision: string;
  modRevision: string;
}

export function encode(value: StoredSession | StoredLock): Buffer {
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
      fencingToken: String(kv.create_revision),
      ttlMillis: stored.ttlMillis,
      grantedAt: stored.grantedAt,
      expiresAt: stored.expiresAt,
    },
    modRevision: String(kv.mod_revision),
    leaseId: String(kv.lease),
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
  };
}

export function toStoredLock(lock: HeldLock): StoredLock {
  return {
    sessionId: lock.sessionId,
    owner: lock.owner,
    ttlMillis: lock.ttlMillis,
    grantedAt: lock.grantedAt,
    expiresAt: lock.expiresAt,
  };
}

export function sessionIsLive(session: SessionRecord, now: number): boolean {
  return session.expiresAt > now;
}

/** A lock is live while its own TTL runs and its session is live (SPI rule: otherwise it is free). */
export function lockIsLive(lock: HeldLock, session: SessionRecord | null, now: number): boolean {
  return lock.expiresAt > now && session !== null && session.sessionId === lock.sessionId && sessionIsLive(session, now);
}
