/**
 * The composition root: assembles one Holdfast server — store → instrumentation →
 * core → HTTP, plus the sweeper and graceful shutdown — and is the one place that
 * plugs exporter/ (metrics, log, tracing) into lock/'s telemetry interfaces
 * (contract/lock-events.ts for the core, contract/http-events.ts for the HTTP
 * surface). Used by `holdfast server` (cli/run-server.ts), tests and benchmarks.
 */
import { setMaxListeners } from 'node:events';
import type { DestinationStream } from 'pino';
import { AdminTokens } from '../lock/admin-tokens.js';
import { loadAuditSealer } from '../lock/audit/audit-key.js';
import { AuditWitness, witnessedStore } from '../lock/audit/witness.js';
import { httpTimeoutsOf, type ServerConfig } from '../lock/config.js';
import type { Clock } from '../lock/core/clock.js';
import { ActivityWindow } from '../lock/core/activity-window.js';
import { systemClock } from '../lock/core/clock.js';
import { LockService } from '../lock/core/lock-service.js';
import { DrainingError, STORE_RESTORED_MESSAGE } from '../lock/errors.js';
import { buildHttpServer } from '../lock/http/server.js';
import { openStore } from '../lock/store/open-store.js';
import { guardRestoredStore } from '../lock/store/restore-guard.js';
import type { LockStore } from '../lock/store/spi.js';
import { registerLocalIdentityRoute } from '../lock/http/local-identity-route.js';
import { ensureIdentityKey } from '../lock/local-identity.js';
import { createEventLog, type EventLog } from '../exporter/events.js';
import { logPolicyReload, openPolicies } from './policies.js';
import { instrumentStore } from '../exporter/instrumented-store.js';
import { createHttpTelemetry, createLockTelemetry } from '../exporter/lock-telemetry.js';
import { renderMetrics } from '../exporter/render-metrics.js';
import { createServerMetrics, type ServerMetrics } from '../exporter/server-metrics.js';
import { policySeries, refreshStoreGauges } from '../exporter/store-gauges.js';
import type { PolicyBook, PolicyReload } from '../lock/policy-book.js';
import { faultClockFromEnv } from './fault-clock.js';
import { watchCredentialFiles, type CredentialFile } from './credential-reload.js';
import { startSweeper } from './sweeper.js';

export interface StartOptions {
  /** Use this store instead of opening the configured one (tests wrap stores). */
  store?: LockStore;
  logDestination?: DestinationStream;
  clock?: Clock;
  random?: () => number;
}

export interface RunningServer {
  url: string;
  port: number;
  service: LockService;
  /** The policies in force (HOLDFAST_POLICIES_FILE, re-read on change). */
  policies: PolicyBook;
  metrics: ServerMetrics;
  events: EventLog;
  /** Where the embedded default's operator token was written, if it was. */
  localTokenFile?: string;
  /** Re-reads the tokens file and the audit key now, as SIGHUP does (server/credential-reload.ts). */
  reloadCredentials(): Promise<void>;
  /**
   * Drain (/readyz and new L4s 503, waits end) for HOLDFAST_DRAIN_DELAY_MS, then stop accepting,
   * finish in-flight requests, close the store.
   */
  stop(): Promise<void>;
}

export async function startHoldfastServer(config: ServerConfig, options: StartOptions = {}): Promise<RunningServer> {
  const auditSealer = await loadAuditSealer(config.HOLDFAST_AUDIT_KEY_FILE);
  // Credentials before the store: a refused tokens file (placeholder, weak token, readable by others)
  // stops the start at once, with the reason, before anything is opened.
  const backend = options.store?.backend ?? config.HOLDFAST_STORE;
  let localTokenFile: string | undefined;
  let identityKey: Buffer | undefined;
  let tokensFile = config.HOLDFAST_ADMIN_TOKENS_FILE;
  if (!tokensFile && backend === 'embedded') {
    localTokenFile = (await AdminTokens.ensureLocalOperator(config.HOLDFAST_DATA_DIR)).file;
    // Beside the local token: the key this server proves itself with before the CLI sends it.
    identityKey = await ensureIdentityKey(config.HOLDFAST_DATA_DIR);
    tokensFile = localTokenFile;
  }
  const tokens = tokensFile ? await AdminTokens.fromFile(tokensFile) : new AdminTokens([]);
  // Policies before the store too: a bad file stops the start, naming its line. Reloads are logged
  // once the event log exists (the first comes a poll interval later at the earliest).
  let reportReload: ((reload: PolicyReload) => void) | undefined;
  const policies = openPolicies(config.HOLDFAST_POLICIES_FILE, (reload) => reportReload?.(reload));
  const openedStore = options.store ?? (await openStore(config));
  const metrics = createServerMetrics(openedStore.backend);
  const events = createEventLog(openedStore.backend, options.logDestination ? { destination: options.logDestination } : {});
  // A store restored from a backup and not advanced refuses writes until `holdfast tokens advance` (issue 25).
  const floorContext = { requestId: 'token-floor' };
  const rawStore = await guardRestoredStore(openedStore, {
    restored: (check) =>
      events.emit('store_restored', floorContext, { recordedIdentity: check.recorded ?? '', liveIdentity: check.live, message: STORE_RESTORED_MESSAGE }),
    advanced: (check) => events.emit('store_advanced', floorContext, { identity: check.live }),
  });
  // The witness remembers the newest audit entry this process saw committed: verify then names
  // entries deleted behind a rewound head even when the head was re-sealed (lock/audit/witness.ts).
  const store = witnessedStore(instrumentStore(rawStore, metrics), new AuditWitness(), auditSealer);
  reportReload = (reload) => logPolicyReload(events, reload);

  // A test's clock, else the fault seam's (only when its env var is set: history runs), else the system's.
  const faultClock = options.clock ? undefined : faultClockFromEnv(process.env);
  const clock = options.clock ?? faultClock?.clock;
  // The admin summary's recent counts: written only by the telemetry (exporter/lock-telemetry.ts),
  // read only by A5 (lock/http/summary.ts).
  const activity = new ActivityWindow(() => (clock ?? systemClock).now());
  const service = new LockService(store, createLockTelemetry({ metrics, log: events, activity }), {
    ...(clock ? { clock } : {}),
    ...(options.random ? { random: options.random } : {}),
    auditSealer,
    // Read at each decision, so an edit of the file applies to the next request.
    policies: () => policies.current(),
    storeHealth: { callTimeoutMillis: config.HOLDFAST_STORE_TIMEOUT_MS, probeIntervalMillis: config.HOLDFAST_STORE_PROBE_INTERVAL_MS },
    maxWaitsPerSession: config.HOLDFAST_MAX_WAITS_PER_SESSION,
    defaultLockTtlMillis: config.LOCK_DEFAULT_TTL_MS,
    contentionBudget: {
      perSessionPerSecond: config.HOLDFAST_CONTENTION_PER_SESSION,
      perSessionBurst: config.HOLDFAST_CONTENTION_PER_SESSION_BURST,
      sharedPerSecond: config.HOLDFAST_CONTENTION_SHARED,
      sharedBurst: config.HOLDFAST_CONTENTION_SHARED_BURST,
    },
    // L4 by a session a scoped token opened, outside its prefixes → 403; prefixesOf reads the tokens as they are now.
    scopeOfToken: (tokenName) => tokens.prefixesOf(tokenName),
  });

  // lock_waiters stays per instance on every backend (summed across instances in PromQL, so it is the
  // fleet total there); L7, A1 and A5 read the store's fleet-wide count. Cycles: the fleet-wide graph
  // where the store keeps wait state (lock/core/fleet.ts), else this instance's.
  // Store-true gauges, counted by the store in the background (exporter/store-gauges.ts), through the
  // health check: while the store is down a refresh is refused at once and the last figures stay.
  // Held locks and the oldest grant per policy (SPEC v3 "teams"): the store splits its count by the
  // policies in force at each refresh.
  const storeGauges = refreshStoreGauges(() => service.storeSummary(), config.HOLDFAST_STORE_GAUGE_REFRESH_MS);
  metrics.setGaugeSource('lockHeld', async () => policySeries(await storeGauges.latest(), 'heldLocks'));
  metrics.setGaugeSource('lockSessionsActive', async () => (await storeGauges.latest()).activeSessions);
  metrics.setGaugeSource('lockOldestHeldSeconds', async () => policySeries(await storeGauges.latest(), 'oldestHeldSeconds'));
  metrics.setGaugeSource('lockSweepLagSeconds', async () => ((await storeGauges.latest()).sweepLagMillis ?? 0) / 1000);
  metrics.setGaugeSource('lockStoreUp', () => (service.storeUp ? 1 : 0));
  metrics.setGaugeSource('lockWaiters', () => service.localWaiterCount());
  metrics.setGaugeSource('lockDeadlockCycles', () => service.deadlockCycles());
  // Release feed and fleet registry before the first request: waits wake on releases from any instance.
  await service.start();

  const shutdown = new AbortController();
  // Every in-flight acquire listens for shutdown: hundreds of listeners are expected, not a leak.
  setMaxListeners(0, shutdown.signal);
  const app = buildHttpServer({
    service,
    tokens,
    // A6 by a scoped operator: who opened the session (lock/http/key-scope.ts), through the health-checked store.
    openerOf: (sessionId) => service.store.getSession(sessionId),
    policies: () => policies.current(),
    telemetry: createHttpTelemetry({ metrics, log: events, activity }),
    activity,
    shutdownSignal: shutdown.signal,
    renderMetrics: (accept) => renderMetrics(metrics.registry, accept),
    timeouts: httpTimeoutsOf(config),
    auditTrail: {
      store: service.store,
      pruned: (result, request, ctx) =>
        events.emit('audit_pruned', ctx, {
          ...request,
          pruned: result.pruned,
          checkpointId: result.checkpoint.id,
          auditId: result.audit.id,
          auditHeadHash: result.audit.hash,
        }),
    },
  });
  if (identityKey) registerLocalIdentityRoute(app, identityKey);

  // Live credentials: the tokens file and the audit key are re-read on change and on SIGHUP.
  const credentialFiles: CredentialFile[] = [];
  if (tokensFile) {
    const file = tokensFile;
    credentialFiles.push({
      credential: 'tokens',
      file,
      reload: async (bytes) => {
        const next = await AdminTokens.fromFile(file, bytes);
        tokens.replaceWith(next);
        return next.size;
      },
    });
  }
  const auditKeyFile = config.HOLDFAST_AUDIT_KEY_FILE;
  if (auditKeyFile) {
    // The same key ring the store seals with (one per key file in the process): re-reading it rotates both.
    credentialFiles.push({ credential: 'audit_key', file: auditKeyFile, reload: async (bytes) => (await loadAuditSealer(auditKeyFile, bytes)).keyIds.length });
  }
  const reloadContext = { requestId: 'credential-reload' };
  const credentials = watchCredentialFiles(credentialFiles, {
    reloaded: (fields) => events.emit('credentials_reloaded', reloadContext, fields),
    refused: (fields) => events.emit('credentials_reload_refused', reloadContext, fields),
  });

  const sweeper = startSweeper(service, events, config.HOLDFAST_SWEEP_INTERVAL_MS);
  await app.listen({ port: config.HOLDFAST_PORT, host: config.HOLDFAST_HOST });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.HOLDFAST_PORT;
  events.emit('server_started', { requestId: 'startup' }, { port, store: rawStore.backend });

  let stopping: Promise<void> | undefined;
  return {
    url: `http://${config.HOLDFAST_HOST}:${port}`,
    port,
    service,
    policies,
    metrics,
    events,
    ...(localTokenFile ? { localTokenFile } : {}),
    reloadCredentials: () => credentials.reloadAll('sighup'),
    stop() {
      stopping ??= (async () => {
        // Waiting acquires answer 503 NOT_LEADER at once so their callers retry elsewhere; the
        // listener stays open for the drain delay so load balancers see /readyz fail first.
        shutdown.abort(new DrainingError('server is draining; retry on another instance'));
        if (config.HOLDFAST_DRAIN_DELAY_MS > 0) await new Promise((resolve) => setTimeout(resolve, config.HOLDFAST_DRAIN_DELAY_MS));
        await app.close();
        credentials.stop();
        storeGauges.stop();
        policies.close();
        await sweeper.stop();
        await service.stop();
        await store.close();
        faultClock?.stop();
      })();
      return stopping;
    },
  };
}
