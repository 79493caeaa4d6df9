/**
 * Where Holdfast keeps its state in etcd. Everything lives under one root so
 * a cluster can host several Holdfast deployments (or test runs) side by side:
 *
 *   {root}s/{sessionId}   session record, attached to the session's lease
 *   {root}l/{lockKey}     lock record, attached to its session's lease;
 *                         the key's create revision is the fencing token
 *   {root}a/{seq}         audit entry, seq zero-padded so keys sort in chain order
 *   {root}ah              audit head: the last seq and hash, compared on every append
 */
export interface KeyLayout {
  readonly root: string;
  session(sessionId: string): Buffer;
  lock(key: string): Buffer;
  auditEntry(seq: number): Buffer;
  readonly auditHead: Buffer;
  readonly sessionsPrefix: Buffer;
  readonly locksPrefix: Buffer;
  readonly auditPrefix: Buffer;
  /** The lock key a full etcd key names, or null when it is not a lock key. */
  lockKeyOf(etcdKey: Buffer): string | null;
  sessionIdOf(etcdKey: Buffer): string | null;
}

const AUDIT_SEQ_WIDTH = 16;

export function keyLayout(prefix = '/holdfast/', namespace?: string): KeyLayout {
  const root = namespace ? `${prefix}${namespace}/` : prefix;
  const sessionsPrefix = Buffer.from(`${root}s/`);
  const locksPrefix = Buffer.from(`${root}l/`);
  const auditPrefix = Buffer.from(`${root}a/`);
  const under = (prefixBytes: Buffer, etcdKey: Buffer): string | null =>
    etcdKey.length >= prefixBytes.length && etcdKey.subarray(0, prefixBytes.length).equals(prefixBytes)
      ? etcdKey.subarray(prefixBytes.length).toString('utf8')
      : null;
  return {
    root,
    session: (sessionId) => Buffer.concat([sessionsPrefix, Buffer.from(sessionId)]),
    lock: (key) => Buffer.concat([locksPrefix, Buffer.from(key)]),
    auditEntry: (seq) => Buffer.concat([auditPrefix, Buffer.from(String(seq).padStart(AUDIT_SEQ_WIDTH, '0'))]),
    auditHead: Buffer.from(`${root}ah`),
    sessionsPrefix,
    locksPrefix,
    auditPrefix,
    lockKeyOf: (etcdKey) => under(locksPrefix, etcdKey),
    sessionIdOf: (etcdKey) => under(sessionsPrefix, etcdKey),
  };
}

/** The exclusive range end that covers every key starting with `prefix` (etcd's prefix convention). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i -= 1) {
    if (end[i]! < 0xff) {
      end[i] = end[i]! + 1;
      return end.subarray(0, i + 1);
    }
  }
  // All 0xff: the range runs to the end of the keyspace.
  return Buffer.from([0]);
}
