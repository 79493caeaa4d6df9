/**
 * What every part of the etcd store shares: the client for the store's lifetime, the key
 * layout, the session cache and keep-alive stream, writes retried through an election, paged
 * scans, and the one liveness test of a session incarnation (sessions, grants and the fleet all
 * decide on it, so it is written once, here).
 */
import type { Etcd3, IKeyValue } from 'etcd3';
import type { Page } from '../../../contract/records.js';
import { isUnavailable, notLeader, range, readTxn } from './etcd-client.js';
import type { KeyLayout } from './keys.js';
import { KeyReadBatcher } from './key-read-batcher.js';
import { SharedKeepAlive } from './keep-alive-stream.js';
import { deleteOp, getOp, modRevisionIs, prefixRange, rangeResult } from './ops.js';
import { decodeSession, type SessionRow } from './records.js';
import { SessionCache } from './session-cache.js';
import { RecordedWaits } from './wait-record.js';

/** A contended write (compare failed because someone else changed the key) is re-decided this many times. */
export const MAX_DECISIONS = 16;
/** How long a write keeps re-trying through unavailability (election) before answering NOT_LEADER. */
const UNAVAILABLE_BUDGET_MS = 4_000;
const UNAVAILABLE_PAUSE_MS = 100;
const SCAN_PAGE = 1_000;
/** Gets per read txn when checking many keys at once (below etcd's default --max-txn-ops of 128). */
const READ_BATCH = 100;

export class EtcdContext {
  /** Set by EtcdStore's init, cleared by its close. */
  client: Etcd3 | null = null;
  readonly sessions = new SessionCache();
  /** Every session's keep-alives on one stream of the shared client. */
  readonly keepAlives = new SharedKeepAlive(() => this.etcd());
  /** Single-key reads of one turn as one read txn (liveness checks, heartbeats). */
  readonly pointReads = new KeyReadBatcher(() => this.etcd());
  /** Waits recorded through this process: beginWait's and those a try recorded in its own txn. */
  readonly recordedWaits = new RecordedWaits();

  constructor(
    readonly keys: KeyLayout,
    /** Advisory instants only (grantedAt, expiresAt, audit `at`, ...): liveness never reads it. */
    readonly clock: () => number,
  ) {}

  etcd(): Etcd3 {
    if (!this.client) throw new Error('EtcdStore used before init() or after close()');
    return this.client;
  }

  /**
   * Runs a write, re-trying through unavailability for a bounded time. Only for
   * writes that are safe to repeat: txns whose compares make a second
   * application a no-op, lease grants and keep-alives.
   */
  async write<T>(attempt: () => Promise<T>): Promise<T> {
    const started = Date.now();
    for (;;) {
      try {
        return await attempt();
      } catch (error) {
        await this.pauseIfUnavailable(error, started);
      }
    }
  }

  /**
   * `write`, telling whether the attempt was sent more than once: a resend whose compare fails may be
   * seeing its own first send, applied but unanswered (landed-delete.ts).
   */
  async writeTellingResends<T>(attempt: () => Promise<T>): Promise<{ result: T; resent: boolean }> {
    let sends = 0;
    const result = await this.write(() => {
      sends += 1;
      return attempt();
    });
    return { result, resent: sends > 1 };
  }

  /** Rethrows bugs; turns unavailability into a short pause, or NOT_LEADER once the budget is spent. */
  async pauseIfUnavailable(error: unknown, startedAt: number): Promise<void> {
    if (!isUnavailable(error)) throw error;
    if (Date.now() - startedAt > UNAVAILABLE_BUDGET_MS) throw notLeader(error);
    await new Promise((resolve) => setTimeout(resolve, UNAVAILABLE_PAUSE_MS));
  }

  // ---------------------------------------------------------------- session incarnations

  /** The live incarnation of a session, read now (never from the cache). */
  async readLiveSession(sessionId: string): Promise<SessionRow | null> {
    const response = await range(this.etcd(), { key: this.keys.session(sessionId) });
    const kv = response.kvs[0];
    if (!kv) {
      this.sessions.forget(sessionId);
      return null;
    }
    const row = decodeSession(kv);
    this.sessions.remember(row);
    return row;
  }

  /**
   * The incarnation a session-scoped txn will compare: from the cache when known
   * (the txn's compare on its create revision catches an ended one), else read.
   */
  async knownSession(sessionId: string): Promise<SessionRow | null> {
    return this.sessions.get(sessionId) ?? (await this.readLiveSession(sessionId));
  }

  /** Whether that incarnation of the session is live now: its leased key exists with that create revision. */
  async sessionIncarnationLive(sessionId: string, createRevision: string): Promise<boolean> {
    const kv = await this.pointReads.read(this.keys.session(sessionId));
    return kv !== undefined && String(kv.create_revision) === createRevision;
  }

  // ---------------------------------------------------------------- reads and scans

  /** Reads many keys (consistently per batch); undefined where a key is absent. */
  async readKeys(keys: Buffer[]): Promise<Array<IKeyValue | undefined>> {
    const found: Array<IKeyValue | undefined> = [];
    for (let start = 0; start < keys.length; start += READ_BATCH) {
      const batch = keys.slice(start, start + READ_BATCH);
      const response = await readTxn(this.etcd(), { success: batch.map((key) => getOp(key)) });
      batch.forEach((_, index) => found.push(rangeResult(response, index)));
    }
    return found;
  }

  /** Deletes a key exactly as it was read (a no-op if it changed meanwhile). */
  async deleteIfUnchanged(kv: IKeyValue): Promise<void> {
    await this.write(() =>
      this.etcd().kv.txn({ compare: [modRevisionIs(kv.key, String(kv.mod_revision))], success: [deleteOp(kv.key)], failure: [] }),
    );
  }

  /** Every key-value under a prefix, a page at a time, in key order. */
  async *scanPages(prefix: Buffer): AsyncIterable<IKeyValue[]> {
    const { range_end } = prefixRange(prefix);
    let from = prefix;
    for (;;) {
      const response = await range(this.etcd(), { key: from, range_end, limit: SCAN_PAGE });
      if (response.kvs.length > 0) yield response.kvs;
      const last = response.kvs[response.kvs.length - 1];
      if (!response.more || !last) return;
      from = Buffer.concat([last.key, Buffer.from([0])]);
    }
  }

  /**
   * Up to `limit` kept items under `base` + `namePrefix`, after the name `cursor`
   * (a lock key or session id: the last item of the previous page).
   */
  async pageOf<T>(
    base: Buffer,
    namePrefix: string,
    cursor: string | undefined,
    limit: number,
    keep: (kv: IKeyValue) => Promise<T | null> | T | null,
  ): Promise<Page<T>> {
    const within = Buffer.concat([base, Buffer.from(namePrefix)]);
    const { range_end } = prefixRange(within);
    let from = cursor !== undefined ? Buffer.concat([base, Buffer.from(cursor), Buffer.from([0])]) : within;
    if (Buffer.compare(from, within) < 0) from = within;
    const items: T[] = [];
    let lastName: string | null = null;
    for (;;) {
      const response = await range(this.etcd(), { key: from, range_end, limit: Math.min(SCAN_PAGE, limit + 1) });
      for (const kv of response.kvs) {
        const item = await keep(kv);
        if (item === null) continue;
        // One more kept item exists beyond a full page: that is what makes a next page.
        if (items.length === limit) return { items, nextCursor: lastName };
        items.push(item);
        lastName = kv.key.subarray(base.length).toString('utf8');
      }
      const last = response.kvs[response.kvs.length - 1];
      if (!response.more || !last) return { items, nextCursor: null };
      from = Buffer.concat([last.key, Buffer.from([0])]);
    }
  }
}
