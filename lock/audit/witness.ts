/**
 * This process's memory of the audit trail: the newest entry it saw committed (its own appends, and
 * heads it read whose seal holds). Everything in the database can be rewritten by whoever can write
 * to it — a key holder can re-seal a rewound head, and a head sealed earlier can be put back as it
 * was — but not this memory: a verify answered by this process names the entries a rewind removed,
 * with or without an audit key. It lasts as long as the process (a restart forgets it; exports and
 * the log's `auditHeadHash` are the lasting witnesses).
 *
 * The store is wrapped (server/holdfast-server.ts) so the witness is fed by committed results only,
 * and its reading is attached to each head read before the head is fetched: an entry committed
 * while a verify walks is not mistaken for a missing one.
 */
import type { AuditEntry } from '../../contract/records.js';
import type { AuditHead, LockStore } from '../store/spi.js';
import type { AuditSealer } from './chain.js';

export class AuditWitness {
  private newest: { id: bigint; hash: string } | undefined;

  /** Notes an entry (or head) seen committed; only a newer id moves the witness. */
  saw(id: string, hash: string): void {
    const n = BigInt(id);
    if (n === 0n) return;
    if (!this.newest || n > this.newest.id) this.newest = { id: n, hash };
  }

  get reading(): { id: string; hash: string } | undefined {
    return this.newest ? { id: this.newest.id.toString(), hash: this.newest.hash } : undefined;
  }
}

/** `store` with its audit appends and sealed heads noted by `witness`, and its head reads carrying the witness's reading. */
export function witnessedStore<S extends LockStore>(store: S, witness: AuditWitness, sealer: AuditSealer): S {
  const noteAudit = (result: { audit: AuditEntry }) => {
    witness.saw(result.audit.id, result.audit.hash);
    return result;
  };
  const overrides: Partial<Record<keyof LockStore, unknown>> = {
    forceRevoke: (...args: Parameters<LockStore['forceRevoke']>) => store.forceRevoke(...args).then(noteAudit),
    killSession: (...args: Parameters<LockStore['killSession']>) => store.killSession(...args).then(noteAudit),
    pruneAudit: (...args: Parameters<LockStore['pruneAudit']>) => store.pruneAudit(...args).then(noteAudit),
    readAuditHead: async (): Promise<AuditHead> => {
      const before = witness.reading;
      const head = await store.readAuditHead();
      if (head.seal !== null && sealer.checkHead(head) === null) witness.saw(head.lastId, head.lastHash);
      return before ? { ...head, witnessed: before } : head;
    },
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof LockStore];
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
