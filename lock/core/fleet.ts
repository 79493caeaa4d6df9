/**
 * This instance's part in a fleet sharing one store (FleetWaitState): it keeps the
 * instance's registry row alive, records nothing itself but re-records local waits if
 * the row lapsed, looks for wait-for cycles fleet-wide (one checker at a time, under the
 * store's lock) and answers the local waits the checker chose as victims.
 */
import { randomBytes } from 'node:crypto';
import type { FleetWaitState } from '../store/spi.js';
import { chooseDeadlockVictims, DEFAULT_DEADLOCK_LIMITS } from './deadlock.js';
import { canDeadlock } from './wait-graph.js';
import { countCycles, type Waiter, type WaiterRegistry } from './waiters.js';

export interface FleetOptions {
  /** How often cycles are looked for and victims collected; a cycle is broken within about two of these. */
  checkEveryMillis?: number;
  heartbeatEveryMillis?: number;
  /** An instance whose heartbeat is older than this is dead: its row and waits are swept. */
  instanceTtlMillis?: number;
  /** Edges read per check (bounded work). */
  maxEdges?: number;
}

export interface FleetHooks {
  /** The live instance count changed (contention cap share). */
  liveInstances(count: number): void;
  /** What this instance publishes for the fleet (e.g. its contention top-K); undefined = nothing. */
  publication?(): unknown;
  checkFailed(error: Error): void;
  /** False while the store is counted down: the check waits for it instead of failing every tick. */
  storeUp?(): boolean;
  /** Records a wait again after this instance's row lapsed (WaitRecords.begin: one way to record a wait). */
  recordAgain(waiter: Waiter): Promise<void>;
}

export class FleetCoordinator {
  readonly instanceId = `i_${randomBytes(12).toString('base64url')}`;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private lastHeartbeat = 0;
  private live = 1;
  private readonly checkEveryMillis: number;
  private readonly heartbeatEveryMillis: number;
  private readonly instanceTtlMillis: number;
  private readonly maxEdges: number;

  constructor(
    readonly store: FleetWaitState,
    private readonly waiters: WaiterRegistry,
    private readonly hooks: FleetHooks,
    options: FleetOptions = {},
  ) {
    this.checkEveryMillis = options.checkEveryMillis ?? 250;
    this.heartbeatEveryMillis = options.heartbeatEveryMillis ?? 1000;
    this.instanceTtlMillis = options.instanceTtlMillis ?? 5000;
    this.maxEdges = options.maxEdges ?? 10_000;
  }

  async start(): Promise<void> {
    await this.heartbeat();
    this.timer = setInterval(() => {
      if (this.running || this.hooks.storeUp?.() === false) return;
      this.running = this.check()
        .catch((error: Error) => this.hooks.checkFailed(error))
        .finally(() => {
          this.running = null;
        });
    }, this.checkEveryMillis);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
    await this.store.leaveFleet(this.instanceId).catch(() => {});
  }

  /** Live instances on the store at this instance's last heartbeat (itself included). */
  get liveInstances(): number {
    return this.live;
  }

  /** Cycles in the fleet-wide wait-for graph now, victims not yet answered included. */
  async deadlockCycles(): Promise<number> {
    const edges = await this.store.waitForEdges(this.maxEdges);
    const graph = new Map<string, Set<string>>();
    for (const e of edges) {
      if (!canDeadlock(e)) continue;
      let set = graph.get(e.sessionId);
      if (!set) graph.set(e.sessionId, (set = new Set()));
      set.add(e.holderSessionId);
    }
    return countCycles(graph);
  }

  private async check(): Promise<void> {
    if (Date.now() - this.lastHeartbeat >= this.heartbeatEveryMillis) await this.heartbeat();
    await this.store.resolveDeadlocks(this.maxEdges, (edges) => chooseDeadlockVictims(edges, DEFAULT_DEADLOCK_LIMITS));
    for (const verdict of await this.store.deadlockVictims(this.instanceId)) {
      const waiter = this.waiters.byId(verdict.waitId);
      if (!waiter) {
        // The wait ended before its verdict arrived (granted meanwhile, which broke the cycle anyway).
        await this.store.endWait(verdict.waitId);
        continue;
      }
      waiter.breakDeadlock({ sessions: verdict.sessions, keys: verdict.keys });
    }
  }

  private async heartbeat(): Promise<void> {
    const publication = this.hooks.publication?.();
    const { liveInstances, joined } = await this.store.heartbeatInstance({
      instanceId: this.instanceId,
      ttlMillis: this.instanceTtlMillis,
      ...(publication !== undefined ? { published: publication } : {}),
    });
    const rejoined = joined && this.lastHeartbeat !== 0;
    this.lastHeartbeat = Date.now();
    this.live = liveInstances;
    this.hooks.liveInstances(liveInstances);
    if (rejoined) {
      // Our row lapsed and was swept with our waits: record the ones still open again.
      for (const waiter of this.waiters.all()) {
        if (waiter.recordedInStore) await this.hooks.recordAgain(waiter);
      }
    }
  }
}
