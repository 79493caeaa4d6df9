/**
 * The parts of the lock service, wired once from a store and its options: the store's health
 * and the health-checked store core speaks to, the waiter registry, the wait strategy chosen
 * from what the store offers, the fleet coordinator and wait records when the store keeps
 * fleet-wide wait state, and the parts each operation uses. lock-service.ts holds the
 * operations; this file only decides what is built from what.
 */
import { createAuditSealer, type AuditSealer } from '../audit/chain.js';
import type { EventContext, LockEvents } from '../../contract/lock-events.js';
import type { LockPolicy } from '../../contract/policies.js';
import { LOCK_TTL_MILLIS } from '../../contract/wire-rules.js';
import type { LockStore } from '../store/spi.js';
import { AcquireWaits } from './acquire-wait.js';
import { systemClock, type Clock, type RandomSource } from './clock.js';
import { ContentionAnswers } from './contention-answers.js';
import { ContentionBudget, DEFAULT_CONTENTION_BUDGET, type ContentionBudgetConfig } from './contention-budget.js';
import { truncateSummary } from './contention-top.js';
import { FleetCoordinator, type FleetOptions } from './fleet.js';
import { Handoffs } from './handoffs.js';
import { healthCheckedStore } from './health-checked-store.js';
import { LockInsight, type LockInsightOptions } from './insight.js';
import { LockPolicies } from './lock-policies.js';
import { LockReads } from './lock-reads.js';
import { LockWatches } from './lock-watches.js';
import { SessionPrincipals } from './session-principals.js';
import { SessionScopes, type ScopeOfToken } from './session-scopes.js';
import { Sessions } from './sessions.js';
import { DEFAULT_STORE_HEALTH, StoreHealth, type StoreHealthOptions } from './store-health.js';
import { WaitRecords } from './wait-records.js';
import { chooseWaitStrategy, FEED_RECHECK_MILLIS, Poller, type WaitStrategy } from './wait-strategy.js';
import { WaiterRegistry } from './waiters.js';

/** Keys of its contention window an instance publishes to the fleet (bounded, so the heartbeat stays small). */
const PUBLISHED_TOP_KEYS = 64;
const FLEET_CHECK: EventContext = { requestId: 'fleet-check' };

export interface LockServiceOptions {
  clock?: Clock;
  random?: RandomSource;
  contentionBudget?: ContentionBudgetConfig;
  /** Polling wait (stores without a ReleaseWaiter): first delay cap and the ceiling. */
  pollBaseMillis?: number;
  pollMaxMillis?: number;
  /** Concurrent server-side waits one session may have here; more are 429 CONTENTION_EXCEEDED. */
  maxWaitsPerSession?: number;
  insight?: LockInsightOptions;
  /** The sealer the store seals with: verification checks links with the same key. */
  auditSealer?: AuditSealer;
  /** Fleet-wide wait state and deadlock checks (stores with FleetWaitState). */
  fleet?: FleetOptions;
  /** With a healthy ReleaseFeed, a parked wait still re-tries this often (a missed notification costs at most this). */
  feedRecheckMillis?: number;
  /**
   * What this instance publishes to the fleet with each heartbeat (FleetWaitState.instancePublications),
   * e.g. its contention top-K summary so A7 can merge every instance's. Must be JSON.
   */
  publication?: () => unknown;
  /** Store call timeout and probe interval of the health state (store-health.ts). */
  storeHealth?: StoreHealthOptions;
  /** The TTL of an acquire that names none and whose key's policy has no default (LOCK_DEFAULT_TTL_MS). */
  defaultLockTtlMillis?: number;
  /** Per-prefix policies (HOLDFAST_POLICIES_FILE), read at each decision: the server swaps them on change. */
  policies?: () => readonly LockPolicy[];
  /** A scoped client token's prefixes, by token name (the tokens file): sessions it opened act only there. */
  scopeOfToken?: ScopeOfToken;
}

export interface ServiceParts {
  clock: Clock;
  /** The store behind the health check: calls feed the health state, and most are refused at once while it is down. */
  store: LockStore;
  storeHealth: StoreHealth;
  waiters: WaiterRegistry;
  insight: LockInsight;
  fleet: FleetCoordinator | null;
  auditSealer: AuditSealer;
  contention: ContentionAnswers;
  strategy: WaitStrategy;
  waits: AcquireWaits;
  records: WaitRecords | null;
  sessions: Sessions;
  reads: LockReads;
  watches: LockWatches;
  principals: SessionPrincipals;
  handoffs: Handoffs;
  policies: LockPolicies;
  /** Null when no token is scoped (the server has no tokens file): nothing to check. */
  scopes: SessionScopes | null;
}

export function wireServiceParts(rawStore: LockStore, events: LockEvents, options: LockServiceOptions): ServiceParts {
  const clock = options.clock ?? systemClock;
  const waiters = new WaiterRegistry();
  let records: WaitRecords | null = null;
  const storeHealth = new StoreHealth(
    () => rawStore.ping(),
    {
      down: (fact) => events.storeDown(fact),
      up: (fact) => {
        events.storeUp(fact);
        // Waits that rode out the outage try again now, not at their next poll.
        waiters.wakeAll();
        void records?.flushUnended();
      },
    },
    options.storeHealth ?? DEFAULT_STORE_HEALTH,
  );
  const store = healthCheckedStore(rawStore, storeHealth);
  const handoffs = new Handoffs(waiters);
  const budget = new ContentionBudget(options.contentionBudget ?? DEFAULT_CONTENTION_BUDGET, clock);
  const insight = new LockInsight(store, waiters, events, () => clock.now(), options.insight);
  const contention = new ContentionAnswers(budget, insight, events, options.maxWaitsPerSession ?? 32);
  const fleet = store.fleet
    ? new FleetCoordinator(
        store.fleet,
        waiters,
        {
          liveInstances: (count) => budget.setInstanceCount(count),
          // By default an instance publishes its contention window (the top 64 keys) for A7.
          publication: options.publication ?? (() => ({ contentionTop: truncateSummary(insight.contention.summary(), PUBLISHED_TOP_KEYS) })),
          checkFailed: (error) => events.fleetCheckFailed(FLEET_CHECK, { message: `fleet check: ${error.message}` }),
          storeUp: () => storeHealth.up,
          recordAgain: (waiter) => records?.begin(waiter) ?? Promise.resolve(),
        },
        options.fleet,
      )
    : null;
  // Chosen once, from what the store offers: core never asks per call what the store can do.
  const poller = new Poller({ clock, random: options.random ?? Math.random, baseMillis: options.pollBaseMillis ?? 25, maxMillis: options.pollMaxMillis ?? 500 });
  const strategy = chooseWaitStrategy(store, poller, waiters, clock, options.feedRecheckMillis ?? FEED_RECHECK_MILLIS);
  records =
    store.fleet && fleet
      ? new WaitRecords(store.fleet, fleet.instanceId, storeHealth, clock)
      : null;
  const waits = new AcquireWaits({ clock, waiters, strategy, poller, records, contention, events, insight });
  const principals = new SessionPrincipals(store);
  const scopes = options.scopeOfToken ? new SessionScopes(store, options.scopeOfToken) : null;
  const policies = new LockPolicies(options.policies ?? (() => []), options.defaultLockTtlMillis ?? LOCK_TTL_MILLIS.default);
  const sessions = new Sessions({ store, events, health: storeHealth, waiters, waits, budget, principals, scopes, insight, records });
  const reads = new LockReads(store, waiters, insight, fleet);
  const watches = new LockWatches({ readLock: (key) => reads.readLock(key), holderWatch: store.holderWatch, instanceId: fleet?.instanceId, clock });
  const auditSealer = options.auditSealer ?? createAuditSealer();
  return { clock, store, storeHealth, waiters, insight, fleet, auditSealer, contention, strategy, waits, records, sessions, reads, watches, principals, handoffs, policies, scopes };
}
