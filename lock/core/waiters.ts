import { randomBytes } from 'node:crypto';
import { MUTEX, type LockMode } from '../../contract/records.js';

/**
 * In-process registry of acquires waiting on this server instance: the live
 * advisory waiterCount per key, the `lock_waiters` gauge, the wait-for graph
 * behind `lock_deadlock_cycles`, immediate wake-up of local waiters when this
 * instance sees a key released, and an abort for every waiter of a session
 * that ends (so it answers SESSION_NOT_FOUND at once, not at its deadline).
 *
 * A waiter is registered before its first try (so a release landing right after the try still
 * wakes it) but counts for nothing — no waiterCount, no per-session cap, no edge of the
 * wait-for graph, no session abort — until it is admitted: after the store has checked its
 * session token (its first try answered `held`). A request naming someone else's session
 * therefore cannot charge or fake anything (issue 24).
 */
import type { HandedGrant, HeldLock } from '../store/spi.js';
import { canDeadlock, type WaitEdge } from './wait-graph.js';
import type { MultiHolderKind } from '../../contract/wire-rules.js';

export class Waiter {
  /**
   * Aborted when the wait must stop early: its session ended, it was chosen to break a deadlock
   * (`deadlock` says which cycle), or its caller left. One signal per wait, not one per cause
   * joined by AbortSignal.any: a contended key parks hundreds of waits a second, and on Node 20
   * each joined signal costs a listener per source and outlives the wait until GC.
   */
  private readonly interruption = new AbortController();
  private sessionEnded = false;
  deadlock: { sessions: string[]; keys: string[] } | null = null;
  /** Recorded in the store's fleet-wide wait state (once it first found the key held). */
  recordedInStore = false;
  /** Its session token was checked by the store: it counts (see the registry's comment). */
  admitted = false;
  private releaseCount = 0;
  private readonly listeners = new Set<() => void>();
  /**
   * Woken from a park and not parked again yet: it is on its way to try the store, and will
   * try once more if told of another release meanwhile (releasesSeen moved on).
   */
  woken = false;
  /** The grant a release handed this wait (FIFO handoff): its acquire answers with it, no try. */
  handed: HeldLock | null = null;
  /** What a release needs to hand this wait the key: the grant's TTL, and when the wait's budget ends (clock epoch ms). */
  grantTtlMillis: number | undefined;
  /** The value a handed grant carries (the acquire's own). */
  grantValue: string | undefined;
  /** An exclusive wait keeps new shared grants out of its key (writer preference). */
  mode: LockMode = MUTEX.mode;
  deadline: number | undefined;

  constructor(
    /** Unique across the fleet: the wait's row in a store that keeps wait state. */
    readonly waitId: string,
    readonly key: string,
    readonly sessionId: string,
    public holderSessionId: string | null,
  ) {}

  /** Set while the key admits several holders (holderSessionId is then its lowest-token one). */
  holderKind: MultiHolderKind | undefined;

  get interrupted(): AbortSignal {
    return this.interruption.signal;
  }

  /** Its session ended while it waited. */
  get sessionHasEnded(): boolean {
    return this.sessionEnded;
  }

  /** Its session ended: the wait answers SESSION_NOT_FOUND at once. */
  endSession(): void {
    this.sessionEnded = true;
    this.interruption.abort(new Error('session ended'));
  }

  /** Chosen to break `cycle`: the wait answers DEADLOCK_DETECTED at once. */
  breakDeadlock(cycle: { sessions: string[]; keys: string[] }): void {
    this.deadlock ??= cycle;
    this.interruption.abort(new Error('deadlock victim'));
  }

  /** Its caller left (the request's signal aborted). */
  callerLeft(reason: unknown): void {
    this.interruption.abort(reason);
  }

  /** How many local releases of the key this waiter has been told of; read it before each try. */
  get releasesSeen(): number {
    return this.releaseCount;
  }

  /**
   * Resolves once a local release arrives after `seen` (at once if one already
   * has), so a release landing between a failed try and this call is not lost.
   */
  releasedSince(seen: number, signal: AbortSignal): Promise<void> {
    if (this.releaseCount > seen || signal.aborted) return Promise.resolve();
    this.woken = false;
    return new Promise((resolve) => {
      const done = () => {
        this.listeners.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.listeners.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** Parked in releasedSince (not busy trying the store or waiting on the store's own mechanism). */
  get parked(): boolean {
    return this.listeners.size > 0;
  }

  /** A release handed this wait the key: it stops waiting. */
  handOff(grant: HeldLock): void {
    this.handed ??= grant;
    this.notifyReleased();
  }

  notifyReleased(): void {
    this.releaseCount++;
    if (this.listeners.size > 0) this.woken = true;
    for (const listener of [...this.listeners]) listener();
  }
}

export class WaiterRegistry {
  /** Every waiter, admitted or not: releases wake from here. */
  private readonly byKey = new Map<string, Set<Waiter>>();
  /** Admitted waiters only: everything that counts reads from here. */
  private readonly admittedByKey = new Map<string, Set<Waiter>>();
  /** Admitted waiters by session (the per-session cap). */
  private readonly bySession = new Map<string, Set<Waiter>>();
  /** Every waiter by session: a session that ends stops all of them, admitted or not (only its owner can end it). */
  private readonly allBySession = new Map<string, Set<Waiter>>();
  private readonly byWaitId = new Map<string, Waiter>();
  private nextWait = 0;

  constructor(private readonly waitIdPrefix = `w_${randomBytes(9).toString('base64url')}`) {}

  /** A waiter that is woken by releases of `key` but counts for nothing until admitted. */
  register(key: string, sessionId: string): Waiter {
    const waiter = new Waiter(`${this.waitIdPrefix}_${++this.nextWait}`, key, sessionId, null);
    addTo(this.byKey, key, waiter);
    addTo(this.allBySession, sessionId, waiter);
    this.byWaitId.set(waiter.waitId, waiter);
    return waiter;
  }

  /** The store has checked the waiter's session token: from now on it counts. */
  admit(waiter: Waiter): void {
    if (waiter.admitted || !this.byWaitId.has(waiter.waitId)) return;
    waiter.admitted = true;
    addTo(this.admittedByKey, waiter.key, waiter);
    addTo(this.bySession, waiter.sessionId, waiter);
  }

  byId(waitId: string): Waiter | undefined {
    return this.byWaitId.get(waitId);
  }

  /** Every admitted waiter. */
  all(): Waiter[] {
    return [...this.byWaitId.values()].filter((waiter) => waiter.admitted);
  }

  /** Every waiter tries again once (releases may have been missed). */
  wakeAll(): void {
    for (const waiter of this.byWaitId.values()) waiter.notifyReleased();
  }

  /** Admitted waits this session has open on this instance. */
  countForSession(sessionId: string): number {
    return this.bySession.get(sessionId)?.size ?? 0;
  }

  unregister(waiter: Waiter): void {
    this.byWaitId.delete(waiter.waitId);
    removeFrom(this.byKey, waiter.key, waiter);
    removeFrom(this.admittedByKey, waiter.key, waiter);
    removeFrom(this.bySession, waiter.sessionId, waiter);
    removeFrom(this.allBySession, waiter.sessionId, waiter);
  }

  /** Every current wait on this instance, for the wait-for graph (GET /v1/admin/waits). */
  snapshot(): WaitEdge[] {
    const waits: WaitEdge[] = [];
    for (const set of this.admittedByKey.values()) {
      for (const w of set) {
        waits.push({ waiterSessionId: w.sessionId, key: w.key, holderSessionId: w.holderSessionId, ...(w.holderKind ? { holderKind: w.holderKind } : {}) });
      }
    }
    return waits;
  }

  count(key: string): number {
    return this.admittedByKey.get(key)?.size ?? 0;
  }

  total(): number {
    let n = 0;
    for (const set of this.admittedByKey.values()) n += set.size;
    return n;
  }

  /**
   * Wakes one waiter on the key, not all of them: only one can win, and waking the
   * herd would cost a failed store round trip each. FIFO: the longest-waiting parked
   * waiter. A waiter already woken and on its way to the store takes this release
   * instead (it tries once more if its try fails): one release can be announced twice
   * — locally by the instance that made it, and again by the store's release feed —
   * and must not cost a second waiter a failed try or jump the queue. The others
   * still recheck, so a woken waiter that dies cannot strand them.
   */
  keyReleased(key: string): void {
    const waiters = this.byKey.get(key);
    if (!waiters || waiters.size === 0) return;
    let oldestParked: Waiter | undefined;
    let oldestAdmitted: Waiter | undefined;
    for (const waiter of waiters) {
      if (waiter.woken) return waiter.notifyReleased();
      if (!oldestParked && waiter.parked) oldestParked = waiter;
      if (!oldestAdmitted && waiter.admitted) oldestAdmitted = waiter;
    }
    // If none is parked, the first one retries as soon as its try ends — an admitted one first: a
    // request whose token is still unchecked may be refused and take the release with it.
    (oldestParked ?? oldestAdmitted ?? waiters.values().next().value!).notifyReleased();
  }

  /** A release handed a wait its key (told by this instance's own release or by the store's feed). */
  handedOff(grant: HandedGrant): void {
    const waiter = this.byWaitId.get(grant.waitId);
    if (waiter && waiter.key === grant.key && waiter.sessionId === grant.sessionId) {
      const { waitId: _waitId, ...held } = grant;
      waiter.handOff(held);
    }
  }

  sessionEnded(sessionId: string): void {
    for (const waiter of this.allBySession.get(sessionId) ?? []) waiter.endSession();
  }

  /**
   * Cycles in the wait-for graph (session → session holding what it waits for),
   * counted as strongly connected components with more than one session or a self-loop.
   */
  deadlockCycles(): number {
    const edges = new Map<string, Set<string>>();
    for (const set of this.admittedByKey.values()) {
      for (const w of set) if (w.holderSessionId && canDeadlock(w)) addTo(edges, w.sessionId, w.holderSessionId);
    }
    return countCycles(edges);
  }
}

/**
 * Tarjan's strongly connected components, iterative: an explicit frame stack instead
 * of recursion, so a chain of any length (10,000 waiting sessions) cannot overflow.
 */
export function countCycles(edges: Map<string, Set<string>>): number {
  let index = 0;
  let cycles = 0;
  const indices = new Map<string, number>();
  const lowlink = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const open = (v: string) => {
    indices.set(v, index);
    lowlink.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    return { v, next: (edges.get(v) ?? new Set<string>()).values() };
  };
  for (const root of edges.keys()) {
    if (indices.has(root)) continue;
    const frames = [open(root)];
    while (frames.length > 0) {
      const frame = frames.at(-1)!;
      const step = frame.next.next();
      if (!step.done) {
        const w = step.value;
        if (!indices.has(w)) frames.push(open(w));
        else if (onStack.has(w)) lowlink.set(frame.v, Math.min(lowlink.get(frame.v)!, indices.get(w)!));
        continue;
      }
      // All successors of v done: close its component if it is a root, then report to the parent.
      const v = frame.v;
      frames.pop();
      if (lowlink.get(v) === indices.get(v)) {
        let size = 0;
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          size++;
        } while (w !== v);
        if (size > 1 || edges.get(v)?.has(v)) cycles++;
      }
      const parent = frames.at(-1);
      if (parent) lowlink.set(parent.v, Math.min(lowlink.get(parent.v)!, lowlink.get(v)!));
    }
  }
  return cycles;
}

function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
}

function removeFrom<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) map.delete(key);
}
