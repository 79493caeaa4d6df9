/**
 * How the etcd fleet state reads waits: the stored form of a wait key, the waits with the live
 * instances in one read, and the test that a wait counts (its instance and its session
 * incarnation both live now). Shared by the wait records (etcd-fleet.ts) and the deadlock
 * verdicts (deadlock-verdicts.ts).
 */
import type { Etcd3, IKeyValue } from 'etcd3';
import { readTxn } from './etcd-client.js';
import type { KeyLayout } from './keys.js';
import { prefixRange, rangeResult, rangeResults } from './ops.js';
import type { SessionRow } from './records.js';
import type { RecordedWaits, StoredWait } from './wait-record.js';

/** What the store lends the fleet: its client, retrying writes, session lookups and keep-alives. */
export interface EtcdFleetContext {
  etcd(): Etcd3;
  keys: KeyLayout;
  write<T>(attempt: () => Promise<T>): Promise<T>;
  writeTellingResends<T>(attempt: () => Promise<T>): Promise<{ result: T; resent: boolean }>;
  /** The session incarnation the store last saw (cache), else read; null when not live. */
  knownSession(sessionId: string, fresh?: boolean): Promise<SessionRow | null>;
  keepAlive(leaseId: string): Promise<number>;
  clock(): number;
  /** Waits recorded through this process (by beginWait or by a try), shared with the grants. */
  recordedWaits: RecordedWaits;
}


export interface WaitRow {
  stored: StoredWait;
  etcdKey: Buffer;
  createRevision: string;
  modRevision: string;
}

/** Gets per read txn (below etcd's default --max-txn-ops of 128). */
export const READ_BATCH = 100;

export class FleetReads {
  constructor(private readonly ctx: EtcdFleetContext) {}

  /** Up to `limit` waits, oldest first, with the live instances, as one read. */
  async readWaits(limit: number): Promise<{ waits: WaitRow[]; instances: Set<string>; verdicts: Set<string> }> {
    const response = await readTxn(this.ctx.etcd(), {
      success: [
        {
          request_range: {
            ...prefixRange(this.ctx.keys.waitsPrefix),
            sort_target: 'Create',
            sort_order: 'Ascend',
            ...(Number.isFinite(limit) ? { limit } : {}),
          },
        },
        { request_range: { ...prefixRange(this.ctx.keys.instancesPrefix), keys_only: true } },
        { request_range: { ...prefixRange(this.ctx.keys.verdictsPrefix), keys_only: true } },
      ],
    });
    const verdicts = new Set(
      rangeResults(response, 2).flatMap((kv) => {
        const named = this.ctx.keys.verdictOf(kv.key);
        return named ? [`${named.instanceId}\0${named.waitId}`] : [];
      }),
    );
    return { waits: rangeResults(response, 0).map((kv) => this.decodeWait(kv)), instances: this.instanceIds(rangeResults(response, 1)), verdicts };
  }

  /** Waits whose instance is live and whose session incarnation is live now. */
  async liveWaits(waits: WaitRow[], instances: Set<string>): Promise<WaitRow[]> {
    const candidates = waits.filter((w) => instances.has(w.stored.instanceId));
    const sessions = await this.sessionRevisions(candidates.map((w) => w.stored.sessionId));
    return candidates.filter((w) => sessions.get(w.stored.sessionId) === w.stored.sessionRevision);
  }

  async findWait(waitId: string): Promise<{ etcdKey: Buffer; instanceId: string } | undefined> {
    const { waits } = await this.readWaits(Number.POSITIVE_INFINITY);
    const wait = waits.find((w) => w.stored.waitId === waitId);
    return wait ? { etcdKey: wait.etcdKey, instanceId: wait.stored.instanceId } : undefined;
  }

  decodeWait(kv: IKeyValue): WaitRow {
    return {
      stored: JSON.parse(kv.value.toString('utf8')) as StoredWait,
      etcdKey: kv.key,
      createRevision: String(kv.create_revision),
      modRevision: String(kv.mod_revision),
    };
  }

  instanceIds(kvs: IKeyValue[]): Set<string> {
    return new Set(kvs.map((kv) => this.ctx.keys.instanceIdOf(kv.key)).filter((id): id is string => id !== null));
  }

  /** The live incarnation (create revision) of each session, read now; absent when not live. */
  async sessionRevisions(sessionIds: string[]): Promise<Map<string, string>> {
    const ids = [...new Set(sessionIds)];
    const kvs = await this.readKeys(ids.map((id) => this.ctx.keys.session(id)), true);
    const live = new Map<string, string>();
    ids.forEach((id, i) => {
      const kv = kvs[i];
      if (kv) live.set(id, String(kv.create_revision));
    });
    return live;
  }

  async readKeys(keys: Buffer[], keysOnly = false): Promise<Array<IKeyValue | undefined>> {
    const found: Array<IKeyValue | undefined> = [];
    for (let start = 0; start < keys.length; start += READ_BATCH) {
      const batch = keys.slice(start, start + READ_BATCH);
      const response = await readTxn(this.ctx.etcd(), { success: batch.map((key) => ({ request_range: { key, keys_only: keysOnly } })) });
      batch.forEach((_, index) => found.push(rangeResult(response, index)));
    }
    return found;
  }
}
