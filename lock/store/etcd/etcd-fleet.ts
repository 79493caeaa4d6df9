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
 * - Deadlock verdicts (the checker key, the verdict txns) are deadlock-verdicts.ts; how waits are
 *   read and which of them count is fleet-reads.ts.
 */
import type { IRequestOp } from 'etcd3';
import type { LockMode } from '../../../contract/records.js';
import type { DeadlockVerdict, FleetWaitState, InstancePublication, WaitEdge } from '../spi.js';
import { DeadlockVerdicts } from './deadlock-verdicts.js';
import { range, readTxn } from './etcd-client.js';
import { FleetReads, READ_BATCH, type EtcdFleetContext, type WaitRow } from './fleet-reads.js';
import { grantLease, leaseTtlSeconds, revokeLease } from './leases.js';
import { createRevisionIs, deleteOp, modRevisionIs, prefixRange, putOp, rangeResults } from './ops.js';
import { ReleaseBatcher } from './release-batcher.js';
import { endWaitOps, waitWrite } from './wait-record.js';

export type { EtcdFleetContext } from './fleet-reads.js';

export class EtcdFleet implements FleetWaitState {
  /**
   * A grant's token is its lock key's create revision (grant-tokens.ts): handing the key on would
   * delete and re-create that key, and etcd refuses a txn that names one key twice. So on etcd a
   * release wakes the key's waiters (their revision-addressed watches) and they try.
   */
  readonly handsOff = false;
  /**
   * A mutex try records its wait in its own txn's failure branch (mutex-try.ts), as a nested txn
   * whose compares admit only "held by another": one raft entry where try and record took two.
   */
  readonly recordsOnTry = true;

  /** Leases of the instances this process heartbeats (normally one). */
  private readonly instanceLeases = new Map<string, string>();
  /**
   * Waits begin and end in bursts under contention (every waiter of a hot key records itself): the
   * wait writes of one event-loop turn share one etcd txn, each its own nested txn (one raft entry).
   */
  private readonly waitWrites: ReleaseBatcher;
  private readonly reads: FleetReads;
  private readonly deadlocks: DeadlockVerdicts;

  constructor(private readonly ctx: EtcdFleetContext) {
    this.waitWrites = new ReleaseBatcher(
      () => ctx.etcd(),
      (attempt) => ctx.writeTellingResends(attempt),
    );
    this.reads = new FleetReads(ctx);
    this.deadlocks = new DeadlockVerdicts(ctx, this.reads, this.instanceLeases);
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

  async beginWait(req: {
    waitId: string;
    sessionId: string;
    key: string;
    instanceId: string;
    ttlMillis?: number;
    deadlineMillis?: number;
    mode?: LockMode;
  }): Promise<void> {
    let session = await this.ctx.knownSession(req.sessionId);
    for (let attempt = 0; attempt < 2 && session; attempt += 1) {
      const current = session;
      const write = waitWrite(this.ctx.keys, req, current, this.ctx.clock());
      const etcdKey = write.etcdKey;
      const txn = { compare: write.compare, success: [write.put], failure: [] };
      let response;
      try {
        ({ response } = await this.waitWrites.submit(etcdKey, txn));
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
        this.ctx.recordedWaits.remember(req.waitId, etcdKey, req.instanceId);
        return;
      }
      // The cached incarnation may be stale: read once. Gone means a no-op (the wait's next try answers).
      session = await this.ctx.knownSession(req.sessionId, true);
      if (session?.createRevision === current.createRevision) return;
    }
  }

  /**
   * A grant sent with this wait's id deleted its key in the grant's own txn (etcd-grants.ts), and
   * core sends no endWait for it: nothing is kept for it here either.
   */
  endedByGrant(waitId: string): void {
    this.ctx.recordedWaits.forget(waitId);
  }

  /** Never hands a wait a key: see `handsOff`. */
  async endWait(waitId: string): Promise<null> {
    const known = this.ctx.recordedWaits.get(waitId) ?? (await this.reads.findWait(waitId));
    if (!known) return null;
    this.ctx.recordedWaits.forget(waitId);
    const ops = endWaitOps(this.ctx.keys, { ...known, waitId });
    await this.waitWrites.submit(known.etcdKey, { compare: [], success: ops, failure: [] });
    return null;
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
      batch.forEach((_, index) => found.push(...rangeResults(response, index).map((kv) => this.reads.decodeWait(kv))));
      instances ??= this.reads.instanceIds(rangeResults(response, batch.length));
    }
    if (found.length === 0) return counts;
    for (const wait of await this.reads.liveWaits(found, instances!)) counts.set(wait.stored.key, (counts.get(wait.stored.key) ?? 0) + 1);
    return counts;
  }

  async totalWaiters(): Promise<number> {
    const { waits, instances } = await this.reads.readWaits(Number.POSITIVE_INFINITY);
    return (await this.reads.liveWaits(waits, instances)).length;
  }

  waitForEdges(limit: number): Promise<WaitEdge[]> {
    return this.deadlocks.waitForEdges(limit);
  }

  resolveDeadlocks(limit: number, decide: (edges: readonly WaitEdge[]) => DeadlockVerdict[]): Promise<DeadlockVerdict[] | null> {
    return this.deadlocks.resolveDeadlocks(limit, decide);
  }

  deadlockVictims(instanceId: string): Promise<DeadlockVerdict[]> {
    return this.deadlocks.deadlockVictims(instanceId);
  }

  // ---------------------------------------------------------------- internals

  /**
   * Deletes waits (and verdicts) of instances that are no longer registered: their lease ran
   * out or they left. Returns how many such instances had something swept.
   */
  private async sweepWaitsOfDeadInstances(limit: number): Promise<number> {
    const { waits, instances } = await this.reads.readWaits(Number.POSITIVE_INFINITY);
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
}
