/**
 * Console records on etcd (lock/store/console-records.ts), under `{root}cr/{kind}/{id}`, each on
 * a lease of its TTL bucket (leases.ts' GrantLeasePool: at least the TTL, under TTL + 1.25 s), so
 * etcd's clock ends them; `expiresAt` is advisory (this server's clock), as for every etcd record.
 * `take` is one delete with `prev_kv`: of concurrent takes, only the delete that removed the key
 * gets its value. A take whose connection broke after etcd applied it is not retried blindly (a
 * second delete finds nothing): the record is then gone unanswered — fail closed, the user asks
 * for a new sign-in link.
 */
import type { IKeyValue } from 'etcd3';
import { checkConsoleList, checkConsoleRecord, type ConsoleRecord, type ConsoleRecordStore } from '../console-records.js';
import { range } from './etcd-client.js';
import type { EtcdContext } from './etcd-context.js';
import { GrantLeasePool, grantLease } from './leases.js';

export class EtcdConsoleRecords implements ConsoleRecordStore {
  private readonly leases: GrantLeasePool;

  constructor(private readonly ctx: EtcdContext) {
    this.leases = new GrantLeasePool((seconds) => ctx.write(() => grantLease(ctx.etcd(), seconds)));
  }

  async put(record: { kind: string; id: string; value: string; ttlMillis: number }): Promise<ConsoleRecord> {
    checkConsoleRecord(record.kind, record.id, record.value, record.ttlMillis);
    const stored: ConsoleRecord = { kind: record.kind, id: record.id, value: record.value, expiresAt: this.ctx.clock() + record.ttlMillis };
    const lease = await this.leases.forTtl(record.ttlMillis);
    const value = Buffer.from(JSON.stringify({ value: stored.value, expiresAt: stored.expiresAt }));
    // A put is safe to repeat: the same value on the same lease.
    await this.ctx.write(() => this.ctx.etcd().kv.put({ key: this.key(record.kind, record.id), value, lease }));
    return stored;
  }

  async get(kind: string, id: string): Promise<ConsoleRecord | null> {
    checkConsoleRecord(kind, id);
    const response = await range(this.ctx.etcd(), { key: this.key(kind, id) });
    const kv = response.kvs[0];
    return kv ? decode(kind, id, kv) : null;
  }

  async take(kind: string, id: string): Promise<ConsoleRecord | null> {
    checkConsoleRecord(kind, id);
    const response = await this.ctx.write(() => this.ctx.etcd().kv.deleteRange({ key: this.key(kind, id), prev_kv: true }));
    const kv = response.prev_kvs[0];
    return kv ? decode(kind, id, kv) : null;
  }

  async delete(kind: string, id: string): Promise<boolean> {
    checkConsoleRecord(kind, id);
    const response = await this.ctx.write(() => this.ctx.etcd().kv.deleteRange({ key: this.key(kind, id) }));
    return Number(response.deleted) > 0;
  }

  async list(kind: string, idPrefix: string, limit: number): Promise<ConsoleRecord[]> {
    checkConsoleList(kind, idPrefix, limit);
    const base = this.key(kind, '');
    const found: ConsoleRecord[] = [];
    for await (const page of this.ctx.scanPages(Buffer.concat([base, Buffer.from(idPrefix)]))) {
      for (const kv of page) found.push(decode(kind, kv.key.subarray(base.length).toString('utf8'), kv));
    }
    return found.sort((a, b) => a.expiresAt - b.expiresAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, limit);
  }

  private key(kind: string, id: string): Buffer {
    return Buffer.from(`${this.ctx.keys.root}cr/${kind}/${id}`);
  }
}

function decode(kind: string, id: string, kv: IKeyValue): ConsoleRecord {
  const parsed = JSON.parse(kv.value.toString('utf8')) as { value: string; expiresAt: number };
  return { kind, id, value: parsed.value, expiresAt: parsed.expiresAt };
}

