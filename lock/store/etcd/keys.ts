/**
 * Where Holdfast keeps its state in etcd. Everything lives under one root so
 * a cluster can host several Holdfast deployments (or test runs) side by side.
 *
 * Liveness is a key on a lease (etcd's clock ends it); the record beside it is
 * unleased, so the sweeper can still report what etcd dropped:
 *
 *   {root}s/{sessionId}          session liveness: on the session's lease; value = the session record
 *   {root}sr/{sessionId}         session record (unleased), created and deleted with the session
 *   {root}l/{lockKey}            lock liveness: on a lease of its TTL bucket (leases.ts); its create revision is
 *                                the fencing token; value names the holder session's incarnation. On a key granted
 *                                shared or with limit > 1 it is the key's anchor instead (holders.ts: mode, limit; unleased)
 *   {root}l/{lockKey}\0{sessionId}  one grant of a multi-holder key (holders.ts): liveness like a mutex's l/ key, on a
 *                                lease of its TTL bucket; its create revision is the grant's token. Lock keys hold no
 *                                control character, so \0 ends the lock key and the grant sorts right after its anchor
 *   {root}lr/{sessionId}/{lockKey}  grant record (unleased), created in the same txn as l/ (same
 *                                create revision), so a session's grants are one prefix range
 *   {root}a/{seq}                audit entry, seq zero-padded so keys sort in chain order
 *   {root}ah                     audit head: the last seq and hash, compared on every append, and its seal
 *   {root}ac                     audit checkpoint: the last pruned seq and hash (covered by the head's seal); a key
 *                                of its own so an append by a release that knows no prune cannot drop it
 *   {root}i/{instanceId}         instance registry (etcd-fleet.ts): on the instance's lease; value = what it publishes
 *   {root}w/{lockKey}/{waitId}   one recorded wait: on the waiting session's lease; its create revision orders
 *                                waits fleet-wide ("youngest wait")
 *   {root}wv/{instanceId}/{waitId}  deadlock verdict for a wait of that instance: on the wait's session lease
 *   {root}dc                     deadlock checker: on the lease of the one instance that looks for cycles
 *   {root}cr/{kind}/{id}         console record (issue 25; etcd-console-records.ts): on a lease of its TTL bucket
 *
 * In grant record keys the session id is URI-encoded (no "/" left), so {sessionId}/ is an unambiguous prefix;
 * so is the lock key in wait keys, and the instance id in verdict keys.
 */
export interface KeyLayout {
  readonly root: string;
  session(sessionId: string): Buffer;
  sessionRecord(sessionId: string): Buffer;
  lock(key: string): Buffer;
  /** One session's grant of a multi-holder key (holders.ts). */
  holder(key: string, sessionId: string): Buffer;
  /** Prefix of every grant of one multi-holder key. */
  holdersOf(key: string): Buffer;
  /** The lock key and every grant under it, as one range (a watch of the key's holders). */
  lockRange(key: string): { start: Buffer; end: Buffer };
  /** The (lock key, session) a multi-holder grant's etcd key names, or null when it is no such key. */
  holderOf(etcdKey: Buffer): { key: string; sessionId: string } | null;
  lockRecord(sessionId: string, key: string): Buffer;
  /** Prefix of every grant record of one session. */
  lockRecordsOf(sessionId: string): Buffer;
  auditEntry(seq: number): Buffer;
  readonly auditHead: Buffer;
  readonly auditCheckpoint: Buffer;
  readonly sessionsPrefix: Buffer;
  readonly sessionRecordsPrefix: Buffer;
  readonly locksPrefix: Buffer;
  readonly lockRecordsPrefix: Buffer;
  readonly auditPrefix: Buffer;
  instance(instanceId: string): Buffer;
  readonly instancesPrefix: Buffer;
  wait(key: string, waitId: string): Buffer;
  /** Prefix of every recorded wait on one lock key. */
  waitsOn(key: string): Buffer;
  readonly waitsPrefix: Buffer;
  verdict(instanceId: string, waitId: string): Buffer;
  verdictsOf(instanceId: string): Buffer;
  readonly verdictsPrefix: Buffer;
  readonly deadlockChecker: Buffer;
  instanceIdOf(etcdKey: Buffer): string | null;
  /** The (instance, wait) a verdict's etcd key names. */
  verdictOf(etcdKey: Buffer): { instanceId: string; waitId: string } | null;
  /** The lock key a full etcd key names, or null when it is not a lock key (a multi-holder grant's key is not). */
  lockKeyOf(etcdKey: Buffer): string | null;
  sessionIdOf(etcdKey: Buffer): string | null;
  sessionIdOfRecord(etcdKey: Buffer): string | null;
  /** The (session, lock key) a grant record's etcd key names. */
  lockRecordOf(etcdKey: Buffer): { sessionId: string; key: string } | null;
}

const AUDIT_SEQ_WIDTH = 16;
/** Ends the lock key in a multi-holder grant's etcd key: no lock key holds a control character. */
const HOLDER_SEPARATOR = Buffer.from([0]);

function isUnder(prefixBytes: Buffer, etcdKey: Buffer): boolean {
  return etcdKey.length >= prefixBytes.length && etcdKey.subarray(0, prefixBytes.length).equals(prefixBytes);
}

export function keyLayout(prefix = '/holdfast/', namespace?: string): KeyLayout {
  const root = namespace ? `${prefix}${namespace}/` : prefix;
  const sessionsPrefix = Buffer.from(`${root}s/`);
  const sessionRecordsPrefix = Buffer.from(`${root}sr/`);
  const locksPrefix = Buffer.from(`${root}l/`);
  const lockRecordsPrefix = Buffer.from(`${root}lr/`);
  const auditPrefix = Buffer.from(`${root}a/`);
  const instancesPrefix = Buffer.from(`${root}i/`);
  const waitsPrefix = Buffer.from(`${root}w/`);
  const verdictsPrefix = Buffer.from(`${root}wv/`);
  const lock = (key: string) => Buffer.concat([locksPrefix, Buffer.from(key)]);
  const holdersOf = (key: string) => Buffer.concat([lock(key), HOLDER_SEPARATOR]);
  const waitsOn = (key: string) => Buffer.concat([waitsPrefix, Buffer.from(`${encodeURIComponent(key)}/`)]);
  const verdictsOf = (instanceId: string) => Buffer.concat([verdictsPrefix, Buffer.from(`${encodeURIComponent(instanceId)}/`)]);
  const under = (prefixBytes: Buffer, etcdKey: Buffer): string | null =>
    isUnder(prefixBytes, etcdKey) ? etcdKey.subarray(prefixBytes.length).toString('utf8') : null;
  return {
    root,
    session: (sessionId) => Buffer.concat([sessionsPrefix, Buffer.from(sessionId)]),
    sessionRecord: (sessionId) => Buffer.concat([sessionRecordsPrefix, Buffer.from(sessionId)]),
    lock,
    holder: (key, sessionId) => Buffer.concat([holdersOf(key), Buffer.from(encodeURIComponent(sessionId))]),
    holdersOf,
    lockRange: (key) => ({ start: lock(key), end: Buffer.concat([lock(key), Buffer.from([HOLDER_SEPARATOR[0]! + 1])]) }),
    holderOf: (etcdKey) => {
      if (!isUnder(locksPrefix, etcdKey)) return null;
      const at = etcdKey.indexOf(HOLDER_SEPARATOR, locksPrefix.length);
      if (at < 0) return null;
      return { key: etcdKey.subarray(locksPrefix.length, at).toString('utf8'), sessionId: decodeURIComponent(etcdKey.subarray(at + 1).toString('utf8')) };
    },
    lockRecord: (sessionId, key) => Buffer.concat([lockRecordsPrefix, Buffer.from(`${encodeURIComponent(sessionId)}/`), Buffer.from(key)]),
    lockRecordsOf: (sessionId) => Buffer.concat([lockRecordsPrefix, Buffer.from(`${encodeURIComponent(sessionId)}/`)]),
    auditEntry: (seq) => Buffer.concat([auditPrefix, Buffer.from(String(seq).padStart(AUDIT_SEQ_WIDTH, '0'))]),
    auditHead: Buffer.from(`${root}ah`),
    auditCheckpoint: Buffer.from(`${root}ac`),
    sessionsPrefix,
    sessionRecordsPrefix,
    locksPrefix,
    lockRecordsPrefix,
    auditPrefix,
    instance: (instanceId) => Buffer.concat([instancesPrefix, Buffer.from(instanceId)]),
    instancesPrefix,
    wait: (key, waitId) => Buffer.concat([waitsOn(key), Buffer.from(waitId)]),
    waitsOn,
    waitsPrefix,
    verdict: (instanceId, waitId) => Buffer.concat([verdictsOf(instanceId), Buffer.from(waitId)]),
    verdictsOf,
    verdictsPrefix,
    deadlockChecker: Buffer.from(`${root}dc`),
    instanceIdOf: (etcdKey) => under(instancesPrefix, etcdKey),
    verdictOf: (etcdKey) => {
      const rest = under(verdictsPrefix, etcdKey);
      if (rest === null) return null;
      const slash = rest.indexOf('/');
      return slash < 0 ? null : { instanceId: decodeURIComponent(rest.slice(0, slash)), waitId: rest.slice(slash + 1) };
    },
    lockKeyOf: (etcdKey) => (etcdKey.includes(HOLDER_SEPARATOR, locksPrefix.length) ? null : under(locksPrefix, etcdKey)),
    sessionIdOf: (etcdKey) => under(sessionsPrefix, etcdKey),
    sessionIdOfRecord: (etcdKey) => under(sessionRecordsPrefix, etcdKey),
    lockRecordOf: (etcdKey) => {
      const rest = under(lockRecordsPrefix, etcdKey);
      if (rest === null) return null;
      const slash = rest.indexOf('/');
      return slash < 0 ? null : { sessionId: decodeURIComponent(rest.slice(0, slash)), key: rest.slice(slash + 1) };
    },
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
