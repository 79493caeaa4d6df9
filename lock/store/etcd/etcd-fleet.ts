/**
 * The etcd side of one service across instances (FleetWaitState): the instance registry,
 * the fleet-wide wait state and deadlock verdicts, all decided by etcd's leases and revisions.
 *
 * - An instance is live while its registry key {root}i/{id} exists: it sits on the instance's
 *   own lease, kept alive by each heartbeat, so a dead instance drops out when the lease runs out.
 * - A wait is one key {root}w/{key}/{waitId} on the waiting session's lease: a session that ends
 *   (revoked lease) or lapses takes its waits with it. A wait counts only while its session
 *   incarnation and its instance are live (checked on every read), so the moment between a
 *   session's end and its lease revocation, or an instance's lapse and the sweep of its waits,
 *   counts nothing. Its create revision is its start: etcd's global order, the same on every
 *   instance, decides which wait of a cycle is the youngest.
 * - One instance at a time looks for cycles: the one whose lease carries {root}dc (created with a
 *   txn; it lapses with its instance and another takes over). A verdict {root}wv/{instance}/{waitId}
 *   is written by a txn that compares everything the cycle was read from (the waits, the locks,
 *   the holders' session incarnations, the checker key), so a verdict only lands while its cycle
 *   stands exactly as read.
 */
import type { Etcd3, ICompare, IKeyValue, IRequestOp } from 'etcd3';
import type { DeadlockVerdict, FleetWaitState, InstancePublication, WaitEdge } from '../spi.js';
import { range, readTxn } from './etcd-client.js';
import type { KeyLayout } from './keys.js';
import { grantLease, leaseTtlSeconds, revokeLease } from './leases.js';
import { createRevisionIs, createRevisionIsNot, deleteOp, getOp, modRevisionIs, prefixRange, putOp, rangeResult, rangeResults } from './ops.js';
import { decodeLock, type SessionRow } from './records.js';
import { ReleaseBatcher } from './release-batcher.js';

/** What the store lends the fleet: its client, retrying writes, session lookups and keep-alives. */
export interface EtcdFleetContext {
  etcd(): Etcd3;
  keys: KeyLayout;
  write<T>(attempt: () => Promise<T>): Promise<T>;
  /** The session incarnation the store last saw (cache), else read; null when not live. */
  knownSession(sessionId: string, fresh?: boolean): Promise<SessionRow | null>;
  keepAlive(leaseId: string): Promise<number>;
  clock(): number;
}

interface StoredWait {
  waitId: string;
  sessionId: string;
  /** Create revision of the waiting session's liveness key: the incarnation that waits. */
  sessionRevision: string;
  key: string;
  instanceId: string;
  leaseId: string;
  /** Advisory (the recording server's clock); the create revision orders waits. */
  recordedAt: number;
}

interface WaitRow {
  stored: StoredWait;
  etcdKey: Buffer;
  createRevision: string;
  modRevision: string;
}

/** What an edge was decided on: compared again when its verdict is written. */
interface EdgeEvidence {
  edge: WaitEdge;
  wait: WaitRow;
  lockKey: Buffer;
  lockModRevision: string;
  holderSessionKey: Buffer;
  holderSessionRevision: string;
}

/** Gets per read txn (below etcd's default --max-txn-ops of 128). */
const READ_BATCH = 100;
/** A verdict txn compares its whole cycle up to this many ops; a longer ring compares only its victim. */
const MAX_VERDICT_COMPARES = 100;

export class EtcdFleet implements FleetWaitState {
  /** Leases of the instances this process heartbeats (normally one). */
  private readonly instanceLeases = new Map<string, string>();
  /** Waits recorded through this process, so endWait finds their keys without a scan. */
  private readonly recorded = new Map<string, { etcdKey: Buffer; instanceId: string }>();
  /**
   * Waits begin and end in bursts under contention (every waiter of a hot key records itself): the
   * wait writes of one event-loop turn share one etcd txn, each its own nested txn (one raft entry).
   */
  private readonly waitWrites: ReleaseBatcher;

  constructor(private readonly ctx: EtcdFleetContext) {
    this.waitWrites = new ReleaseBatcher(
      () => ctx.etcd(),
      (attempt) => ctx.write(attempt),
    );
  }

  // ---------------------------------------------------------------- registry

  async heartbeatInstance(req: { instanceId: string; ttlMillis: number; published?: unknown }): Promise<{ liveInstances: number; joined: boolean }> {
    const client = this.ctx.etcd();
    const keys = this.ctx.keys;
    const instanceKey = keys.instance(req.instanceId);
    const value = Buffer.from(JSON.stringify({ heartbeatAt: this.ctx.clock(), ...(req.published !== undefined ? { published: req.published } : {}) }));
    for (let attempt = 0; ; attempt += 1) {
      let leaseId = this.instanceLeases.get(req.instanceId);
      // etcd refuses to renew a lease that ran out: then the instance lapsed and joins anew.
      if (leaseId !== undefined && (await this.ctx.write(() => this.ctx.keepAlive(leaseId!))) <= 0) leaseId = undefined;
      if (leaseId === undefined) {
        leaseId = await this.ctx.write(() => grantLease(client, leaseTtlSeconds(req.ttlMillis)));
        this.instanceLeases.set(req.instanceId, leaseId);
      }
      const lease = leaseId;
      const count: IRequestOp = { request_range: { ...prefixRange(keys.instancesPrefix), count_only: true } };
      try {
        const response = await this.ctx.write(() =>
          client.kv.txn({
            compare: [createRevisionIs(instanceKey, '0')],
            success: [putOp(instanceKey, value, lease), count],
            failure: [putOp(instanceKey, value, lease), count],
          }),
        );
        const live = Number(response.responses[1]?.response_range?.count ?? 1);
        return { liveInstances: Math.max(1, live), joined: response.succeeded };
      } catch (error) {
        // The lease ran out between the keep-alive and the put: take a fresh one, once.
        if (attempt > 0 || !/lease not found/i.test((error as Error).message)) throw error;
        this.instanceLeases.delete(req.instanceId);
      }
    }
  }

  async leaveFleet(instanceId: string): Promise<void> {
    const leaseId = this.instanceLeases.get(instanceId);
    this.instanceLeases.delete(instanceId);
    const client = this.ctx.etcd();
    // Revoking the lease drops the registry key (and the checker key, if this instance held it).
    if (leaseId !== undefined) await revokeLease(client, leaseId);
    await this.ctx.write(() => client.kv.txn({ compare: [], success: [deleteOp(this.ctx.keys.instance(instanceId))], failure: [] }));
    await this.sweepWaitsOfDeadInstances(Number.POSITIVE_INFINITY);
  }

  async expireInstances(limit: number): Promise<number> {
    return this.sweepWaitsOfDeadInstances(limit);
  }

  async instancePublications(): Promise<InstancePublication[]> {
    const response = await range(this.ctx.etcd(), prefixRange(this.ctx.keys.instancesPrefix));
    return response.kvs.flatMap((kv) => {
      const instanceId = this.ctx.keys.instanceIdOf(kv.key);
      const value = JSON.parse(kv.value.toString('utf8')) as { published?: unknown };
      return instanceId !== null && value.published !== undefined ? [{ instanceId, published: value.published }] : [];
    });
  }

  // ---------------------------------------------------------------- waits

  async beginWait(req: { waitId: string; sessionId: string; key: string; instanceId: string }): Promise<void> {
    const keys = this.ctx.keys;
    const etcdKey = keys.wait(req.key, req.waitId);
    let session = await this.ctx.knownSession(req.sessionId);
    for (let attempt = 0; attempt < 2 && session; attempt += 1) {
      const current = session;
      const stored: StoredWait = {
        waitId: req.waitId,
        sessionId: req.sessionId,
        sessionRevision: current.createRevision,
        key: req.key,
        instanceId: req.instanceId,
        leaseId: current.session.leaseId,
        recordedAt: this.ctx.clock(),
      };
      const txn = {
        // Only while that session incarnation (whose lease the key joins) and the instance are live.
        compare: [createRevisionIs(keys.session(req.sessionId), current.createRevision), createRevisionIsNot(keys.instance(req.instanceId), '0')],
        success: [putOp(etcdKey, Buffer.from(JSON.stringify(stored)), current.session.leaseId)],
        failure: [],
      };
      let response;
      try {
        response = await this.waitWrites.submit(etcdKey, txn);
      } catch (error) {
        if (!/lease not found/i.test((error as Error).message)) throw error;
        // One wait's lease ended in a shared txn and failed the others with it: this one goes alone.
        try {
          response = await this.ctx.write(() => this.ctx.etcd().kv.txn(txn));
        } catch (alone) {
          if (/lease not found/i.test((alone as Error).message)) return; // its session ended: nothing to record
          throw alone;
        }
      }
      if (response.succeeded) {
        this.recorded.set(req.waitId, { etcdKey, instanceId: req.instanceId });
        return;
      }
      // The cached incarnation may be stale: read once. Gone means a no-op (the wait's next try answers).
      session = await this.ctx.knownSession(req.sessionId, true);
      if (session?.createRevision === current.createRevision) return;
    }
  }

  async endWait(waitId: string): Promise<void> {
    const known = this.recorded.get(waitId) ?? (await this.findWait(waitId));
    if (!known) return;
    this.recorded.delete(waitId);
    const ops = [deleteOp(known.etcdKey), deleteOp(this.ctx.keys.verdict(known.instanceId, waitId))];
    await this.waitWrites.submit(known.etcdKey, { compare: [], success: ops, failure: [] });
  }

  async waiterCounts(keys: readonly string[]): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    const found: WaitRow[] = [];
    let instances: Set<string> | null = null;
    for (let start = 0; start < keys.length; start += READ_BATCH) {
      const batch = keys.slice(start, start + READ_BATCH);
      const ops: IRequestOp[] = batch.map((key) => ({ request_range: prefixRange(this.ctx.keys.waitsOn(key)) }));
      if (!instances) ops.push({ request_range: { ...prefixRange(this.ctx.keys.instancesPrefix), keys_only: true } });
      const response = await readTxn(this.ctx.etcd(), { success: ops });
      batch.forEach((_, index) => found.push(...rangeResults(response, index).map((kv) => this.decodeWait(kv))));
      instances ??= this.instanceIds(rangeResults(response, batch.length));
    }
    if (found.length === 0) return counts;
    for (const wait of await this.liveWaits(found, instances!)) counts.set(wait.stored.key, (counts.get(wait.stored.key) ?? 0) + 1);
    return counts;
  }

  async totalWaiters(): Promise<number> {
    const { waits, instances } = await this.readWaits(Number.POSITIVE_INFINITY);
    return (await this.liveWaits(waits, instances)).length;
  }

  async waitForEdges(limit: number): Promise<WaitEdge[]> {
    return (await this.readEdges(limit)).map((e) => e.edge);
  }

  async resolveDeadlocks(limit: number, decide: (edges: readonly WaitEdge[]) => DeadlockVerdict[]): Promise<DeadlockVerdict[] | null> {
    const checker = await this.claimChecker();
    if (!checker) return null;
    // Waits already chosen are left out: their cycle is broken once they answer.
    const evidence = (await this.readEdges(limit)).filter((e) => !e.edge.victim);
    const verdicts = decide(evidence.map((e) => e.edge));
    const bySessionKey = new Map(evidence.map((e) => [`${e.edge.sessionId}\0${e.edge.key}`, e]));
    const byWait = new Map(evidence.map((e) => [e.edge.waitId, e]));
    const marked: DeadlockVerdict[] = [];
    for (const verdict of verdicts) {
      const victim = byWait.get(verdict.waitId);
      if (!victim) continue;
      const cycle = verdict.sessions.map((sessionId, i) => bySessionKey.get(`${sessionId}\0${verdict.keys[i]}`));
      const whole = cycle.every((e) => e !== undefined) && cycle.length * 3 + 2 <= MAX_VERDICT_COMPARES;
      const compare: ICompare[] = [createRevisionIs(this.ctx.keys.deadlockChecker, checker)];
      for (const e of whole ? (cycle as EdgeEvidence[]) : [victim]) {
        compare.push(
          modRevisionIs(e.wait.etcdKey, e.wait.modRevision),
          modRevisionIs(e.lockKey, e.lockModRevision),
          createRevisionIs(e.holderSessionKey, e.holderSessionRevision),
        );
      }
      const verdictKey = this.ctx.keys.verdict(victim.edge.instanceId, victim.edge.waitId);
      const value = Buffer.from(JSON.stringify({ sessions: verdict.sessions, keys: verdict.keys }));
      try {
        const response = await this.ctx.write(() =>
          this.ctx.etcd().kv.txn({
            compare: [...compare, createRevisionIs(verdictKey, '0')],
            // On the victim session's lease: the verdict goes with the wait's session.
            success: [putOp(verdictKey, value, victim.wait.stored.leaseId)],
            failure: [],
          }),
        );
        if (response.succeeded) marked.push(verdict);
      } catch (error) {
        // The victim's session lease ended meanwhile: its wait ended with it, nothing to answer.
        if (!/lease not found/i.test((error as Error).message)) throw error;
      }
    }
    return marked;
  }

  async deadlockVictims(instanceId: string): Promise<DeadlockVerdict[]> {
    const response = await range(this.ctx.etcd(), prefixRange(this.ctx.keys.verdictsOf(instanceId)));
    return response.kvs.flatMap((kv) => {
      const named = this.ctx.keys.verdictOf(kv.key);
      if (!named) return [];
      const cycle = JSON.parse(kv.value.toString('utf8')) as { sessions: string[]; keys: string[] };
      return [{ waitId: named.waitId, sessions: cycle.sessions, keys: cycle.keys }];
    });
  }

  // ---------------------------------------------------------------- internals

  /**
   * The create revision of the checker key when this process's instance holds it (creating it on
   * the instance's lease if nobody does), else null: another instance checks.
   */
  private async claimChecker(): Promise<string | null> {
    const [instanceId, leaseId] = [...this.instanceLeases][0] ?? [];
    if (instanceId === undefined || leaseId === undefined) return null;
    const key = this.ctx.keys.deadlockChecker;
    // A read first: every instance asks every round, and only a vacant key is worth a raft write.
    let kv = (await range(this.ctx.etcd(), { key })).kvs[0];
    if (!kv) {
      try {
        const response = await this.ctx.write(() =>
          this.ctx.etcd().kv.txn({
            compare: [createRevisionIs(key, '0')],
            success: [putOp(key, Buffer.from(instanceId), leaseId), getOp(key)],
            failure: [getOp(key)],
          }),
        );
        kv = rangeResult(response, response.succeeded ? 1 : 0);
      } catch (error) {
        if (/lease not found/i.test((error as Error).message)) return null; // lapsed: the next heartbeat rejoins
        throw error;
      }
    }
    return kv && kv.value.toString('utf8') === instanceId ? String(kv.create_revision) : null;
  }

  /** Up to `limit` waits, oldest first, with the live instances, as one read. */
  private async readWaits(limit: number): Promise<{ waits: WaitRow[]; instances: Set<string>; verdicts: Set<string> }> {
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
  private async liveWaits(waits: WaitRow[], instances: Set<string>): Promise<WaitRow[]> {
    const candidates = waits.filter((w) => instances.has(w.stored.instanceId));
    const sessions = await this.sessionRevisions(candidates.map((w) => w.stored.sessionId));
    return candidates.filter((w) => sessions.get(w.stored.sessionId) === w.stored.sessionRevision);
  }

  private async readEdges(limit: number): Promise<EdgeEvidence[]> {
    const { waits, instances, verdicts } = await this.readWaits(limit);
    const live = await this.liveWaits(waits, instances);
    if (live.length === 0) return [];
    const lockKeys = [...new Set(live.map((w) => w.stored.key))];
    const locks = await this.readKeys(lockKeys.map((key) => this.ctx.keys.lock(key)));
    const holders = new Map<string, { row: ReturnType<typeof decodeLock>; kv: IKeyValue }>();
    lockKeys.forEach((key, i) => {
      const kv = locks[i];
      if (kv) holders.set(key, { row: decodeLock(key, kv), kv });
    });
    const holderSessions = await this.sessionRevisions([...holders.values()].map((h) => h.row.stored.sessionId));
    const edges: EdgeEvidence[] = [];
    for (const wait of live) {
      const holder = holders.get(wait.stored.key);
      if (!holder) continue;
      const { stored } = holder.row;
      if (stored.sessionId === wait.stored.sessionId) continue;
      if (holderSessions.get(stored.sessionId) !== stored.sessionRevision) continue; // a lapsed holder holds nothing
      edges.push({
        edge: {
          waitId: wait.stored.waitId,
          sessionId: wait.stored.sessionId,
          key: wait.stored.key,
          holderSessionId: stored.sessionId,
          instanceId: wait.stored.instanceId,
          startedAt: Number(wait.createRevision),
          victim: verdicts.has(`${wait.stored.instanceId}\0${wait.stored.waitId}`),
        },
        wait,
        lockKey: this.ctx.keys.lock(wait.stored.key),
        lockModRevision: String(holder.kv.mod_revision),
        holderSessionKey: this.ctx.keys.session(stored.sessionId),
        holderSessionRevision: stored.sessionRevision,
      });
    }
    return edges;
  }

  /**
   * Deletes waits (and verdicts) of instances that are no longer registered: their lease ran
   * out or they left. Returns how many such instances had something swept.
   */
  private async sweepWaitsOfDeadInstances(limit: number): Promise<number> {
    const { waits, instances } = await this.readWaits(Number.POSITIVE_INFINITY);
    const verdicts = await range(this.ctx.etcd(), { ...prefixRange(this.ctx.keys.verdictsPrefix), keys_only: true });
    const dead = new Set<string>();
    const orphans: Array<{ key: Buffer; modRevision: string }> = [];
    for (const wait of waits) {
      if (instances.has(wait.stored.instanceId)) continue;
      if (!dead.has(wait.stored.instanceId) && dead.size >= limit) continue;
      dead.add(wait.stored.instanceId);
      orphans.push({ key: wait.etcdKey, modRevision: wait.modRevision });
    }
    for (const kv of verdicts.kvs) {
      const named = this.ctx.keys.verdictOf(kv.key);
      if (!named || instances.has(named.instanceId)) continue;
      if (!dead.has(named.instanceId) && dead.size >= limit) continue;
      dead.add(named.instanceId);
      orphans.push({ key: kv.key, modRevision: String(kv.mod_revision) });
    }
    for (let start = 0; start < orphans.length; start += READ_BATCH) {
      // One txn per orphan would be a round trip each: delete a batch, each only if unchanged since the read.
      const batch = orphans.slice(start, start + READ_BATCH);
      await Promise.all(
        batch.map((o) =>
          this.ctx.write(() => this.ctx.etcd().kv.txn({ compare: [modRevisionIs(o.key, o.modRevision)], success: [deleteOp(o.key)], failure: [] })),
        ),
      );
    }
    return dead.size;
  }

  private async findWait(waitId: string): Promise<{ etcdKey: Buffer; instanceId: string } | undefined> {
    const { waits } = await this.readWaits(Number.POSITIVE_INFINITY);
    const wait = waits.find((w) => w.stored.waitId === waitId);
    return wait ? { etcdKey: wait.etcdKey, instanceId: wait.stored.instanceId } : undefined;
  }

  private decodeWait(kv: IKeyValue): WaitRow {
    return {
      stored: JSON.parse(kv.value.toString('utf8')) as StoredWait,
      etcdKey: kv.key,
      createRevision: String(kv.create_revision),
      modRevision: String(kv.mod_revision),
    };
  }

  private instanceIds(kvs: IKeyValue[]): Set<string> {
    return new Set(kvs.map((kv) => this.ctx.keys.instanceIdOf(kv.key)).filter((id): id is string => id !== null));
  }

  /** The live incarnation (create revision) of each session, read now; absent when not live. */
  private async sessionRevisions(sessionIds: string[]): Promise<Map<string, string>> {
    const ids = [...new Set(sessionIds)];
    const kvs = await this.readKeys(ids.map((id) => this.ctx.keys.session(id)), true);
    const live = new Map<string, string>();
    ids.forEach((id, i) => {
      const kv = kvs[i];
      if (kv) live.set(id, String(kv.create_revision));
    });
    return live;
  }

  private async readKeys(keys: Buffer[], keysOnly = false): Promise<Array<IKeyValue | undefined>> {
    const found: Array<IKeyValue | undefined> = [];
    for (let start = 0; start < keys.length; start += READ_BATCH) {
      const batch = keys.slice(start, start + READ_BATCH);
      const response = await readTxn(this.ctx.etcd(), { success: batch.map((key) => ({ request_range: { key, keys_only: keysOnly } })) });
      batch.forEach((_, index) => found.push(rangeResult(response, index)));
    }
    return found;
  }
}
