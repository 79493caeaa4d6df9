/**
 * Deadlock verdicts across the fleet: one instance at a time looks for cycles, the one whose
 * lease carries {root}dc (created with a txn; it lapses with its instance and another takes
 * over). A verdict {root}wv/{instance}/{waitId} is written by a txn that compares everything the
 * cycle was read from (the waits, the locks, the holders' session incarnations, the checker
 * key), so a verdict only lands while its cycle stands exactly as read.
 */
import type { ICompare, IKeyValue } from 'etcd3';
import type { DeadlockVerdict, WaitEdge } from '../spi.js';
import { range } from './etcd-client.js';
import type { EtcdFleetContext, FleetReads, WaitRow } from './fleet-reads.js';
import { createRevisionIs, getOp, modRevisionIs, prefixRange, putOp, rangeResult } from './ops.js';
import { isAnchor } from './holders.js';
import { decodeLock } from './records.js';
import { multiHolderKindOf } from '../../../contract/wire-rules.js';

/** What an edge was decided on: compared again when its verdict is written. */
interface EdgeEvidence {
  edge: WaitEdge;
  wait: WaitRow;
  lockKey: Buffer;
  lockModRevision: string;
  holderSessionKey: Buffer;
  holderSessionRevision: string;
}

interface LiveWait {
  wait: WaitRow;
  /** Already chosen as a deadlock victim. */
  victim: boolean;
}

/** A verdict txn compares its whole cycle up to this many ops; a longer ring compares only its victim. */
const MAX_VERDICT_COMPARES = 100;

export class DeadlockVerdicts {
  constructor(
    private readonly ctx: EtcdFleetContext,
    private readonly reads: FleetReads,
    /** Leases of the instances this process heartbeats: the checker key goes on one of them. */
    private readonly instanceLeases: ReadonlyMap<string, string>,
  ) {}

  /**
   * The operator's view, with owners (the holder's from its grant record, the waiter's from its
   * session): the edges deadlocks are decided on, and a wait on a key that admits several holders
   * with an edge to each live grant, marked with the key's kind.
   */
  async waitForEdges(limit: number): Promise<WaitEdge[]> {
    const live = await this.liveWaits(limit);
    // One read of the waited-on lock keys serves both kinds of edge.
    const locks = await this.lockKeysOf(live);
    const [mutex, holds] = await Promise.all([this.mutexEdges(live, locks), this.holdEdges(live, locks)]);
    const edges = [...mutex.map((e) => e.edge), ...holds].sort((a, b) => a.startedAt - b.startedAt).slice(0, limit);
    const waiting = [...new Set(edges.map((e) => e.sessionId))];
    const sessions = await Promise.all(waiting.map((sessionId) => this.ctx.knownSession(sessionId).catch(() => null)));
    const owners = new Map(waiting.map((sessionId, i) => [sessionId, sessions[i]?.session.owner]));
    return edges.map((edge) => {
      const owner = owners.get(edge.sessionId);
      return owner !== undefined ? { ...edge, owner } : edge;
    });
  }

  async resolveDeadlocks(limit: number, decide: (edges: readonly WaitEdge[]) => DeadlockVerdict[]): Promise<DeadlockVerdict[] | null> {
    const checker = await this.claimChecker();
    if (!checker) return null;
    // Waits already chosen are left out: their cycle is broken once they answer.
    const live = await this.liveWaits(limit);
    const evidence = (await this.mutexEdges(live, await this.lockKeysOf(live))).filter((e) => !e.edge.victim);
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

  private async liveWaits(limit: number): Promise<LiveWait[]> {
    const { waits, instances, verdicts } = await this.reads.readWaits(limit);
    const live = await this.reads.liveWaits(waits, instances);
    return live.map((wait) => ({ wait, victim: verdicts.has(`${wait.stored.instanceId}\0${wait.stored.waitId}`) }));
  }

  /** The lock key (a mutex's holder, or a multi-holder key's anchor) of each key the waits wait on, as read now. */
  private async lockKeysOf(liveWaits: readonly LiveWait[]): Promise<Map<string, IKeyValue>> {
    const keys = [...new Set(liveWaits.map((w) => w.wait.stored.key))];
    const found = await this.reads.readKeys(keys.map((key) => this.ctx.keys.lock(key)));
    const locks = new Map<string, IKeyValue>();
    keys.forEach((key, i) => {
      if (found[i]) locks.set(key, found[i]);
    });
    return locks;
  }

  /** Each live wait on a mutex key with a live holder of another session, with the evidence a verdict compares. */
  private async mutexEdges(liveWaits: readonly LiveWait[], locks: ReadonlyMap<string, IKeyValue>): Promise<EdgeEvidence[]> {
    if (liveWaits.length === 0) return [];
    const live = liveWaits.map((w) => w.wait);
    const victims = new Set(liveWaits.filter((w) => w.victim).map((w) => w.wait));
    const holders = new Map<string, { row: ReturnType<typeof decodeLock>; kv: IKeyValue }>();
    for (const [key, kv] of locks) {
      // Mutex keys only: a cycle through a key that admits several holders need not be a deadlock.
      if (!isAnchor(kv)) holders.set(key, { row: decodeLock(key, kv), kv });
    }
    const holderSessions = await this.reads.sessionRevisions([...holders.values()].map((h) => h.row.stored.sessionId));
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
          victim: victims.has(wait),
          holderOwner: stored.owner,
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

  /** Each live wait on a key that admits several holders: an edge to each live grant of another session. */
  private async holdEdges(liveWaits: readonly LiveWait[], locks: ReadonlyMap<string, IKeyValue>): Promise<WaitEdge[]> {
    const multiHolderKeys = [...locks].filter(([, kv]) => isAnchor(kv)).map(([key]) => key);
    if (multiHolderKeys.length === 0) return [];
    const grants = (
      await Promise.all(
        multiHolderKeys.map(async (key) => (await range(this.ctx.etcd(), prefixRange(this.ctx.keys.holdersOf(key)))).kvs.map((kv) => decodeLock(key, kv))),
      )
    ).flat();
    const liveSessions = await this.reads.sessionRevisions(grants.map((g) => g.stored.sessionId));
    const liveGrants = grants.filter((g) => liveSessions.get(g.stored.sessionId) === g.stored.sessionRevision);
    const edges: WaitEdge[] = [];
    for (const { wait, victim } of liveWaits) {
      for (const grant of liveGrants) {
        if (grant.lock.key !== wait.stored.key || grant.stored.sessionId === wait.stored.sessionId) continue;
        const holderKind = multiHolderKindOf(grant.lock);
        edges.push({
          waitId: wait.stored.waitId,
          sessionId: wait.stored.sessionId,
          key: wait.stored.key,
          holderSessionId: grant.stored.sessionId,
          instanceId: wait.stored.instanceId,
          startedAt: Number(wait.createRevision),
          victim,
          holderOwner: grant.stored.owner,
          ...(holderKind ? { holderKind } : {}),
        });
      }
    }
    return edges;
  }
}
