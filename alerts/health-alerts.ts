/**
 * Lock-health alerts beside the SLO: the store failing (the root cause that
 * inhibits its symptoms), symptoms that hurt users before the budget shows it
 * (sessions dying, waiters piling up, broken watches, old locks, a lagging
 * sweeper), the backend refusing writes, and alerts on the monitoring itself.
 * Every threshold and `for` comes from the generator config, and each
 * description states them.
 */
import { METRICS } from '../contract/metric-table.js';
import { STORE_WRITE_OPS, durationSeconds, humanDuration, humanSeconds, type MonitoringConfig } from './config.js';
import type { AlertingRule } from './define-alert.js';
import { promDuration, requireLabel } from './promql.js';
import { lockHeldTooLong } from './policy-alerts.js';
import type { RuleContext } from './rule-context.js';
import type { RuleGroup } from './rule-types.js';
import { sloModel } from './slo.js';

const percent = (share: number) => `${Number((share * 100).toPrecision(6))}%`;

/** Alerts that watch the whole fleet, not one backend: they carry `backend="all"`. */
export const FLEET_WIDE = { backend: 'all' } as const;

export const STORE_UNREACHABLE_ALERT = 'HoldfastStoreUnreachable';
export const TARGET_DOWN_ALERT = 'HoldfastTargetDown';
export const TARGET_MISSING_ALERT = 'HoldfastTargetMissing';
export const WATCHDOG_ALERT = 'HoldfastWatchdog';

/**
 * Range windows of the symptom alerts that a store outage fires. Each is also how long its alert
 * can still see an outage after the store is back, which `storeOutageTail` needs.
 */
export const SYMPTOM_WINDOWS = { storeSlow: '5m', sessionLoss: '10m', waitFallback: '10m' } as const;

/**
 * Slack on top of the longest symptom window: a scrape and an evaluation interval before the
 * symptom's last outage sample leaves its window, sessions whose TTL ran out during the outage
 * expired by the first sweep after it (their expiries start `HoldfastSessionLossSpike`'s window
 * late), and the symptom's resolution reaching Alertmanager before the root cause's.
 */
const STORE_OUTAGE_SETTLE_SECONDS = 300;

/**
 * How long `HoldfastStoreUnreachable` keeps firing after the store is back (`keep_firing_for`):
 * until no symptom it inhibits can still fire on the outage's samples. Without it the inhibition
 * ended with the root cause while `rate(…[2m])` and the burn-rate windows still held outage
 * answers, and the symptoms paged after recovery.
 *
 * A symptom fires only while its expression holds, and after recovery that lasts as long as its
 * window still holds outage samples: its `for` no longer matters (a symptom already firing stays
 * firing, one still pending cannot outlast its window). A burn-rate tier needs both windows, so its
 * short one decides. Ticket tiers are left out: their short windows (hours) outlast any sensible
 * hold, and a slow-burn ticket after a long outage says what the outage cost the budget.
 */
export function storeOutageTail(config: MonitoringConfig): string {
  const windows = [
    config.thresholds.notLeaderWindow,
    ...Object.values(SYMPTOM_WINDOWS),
    ...sloModel(config).burnTiers.filter((tier) => tier.action === 'page').map((tier) => tier.short),
  ];
  return promDuration(Math.max(...windows.map(durationSeconds)) + STORE_OUTAGE_SETTLE_SECONDS);
}

/**
 * The root cause of a store outage: when a server cannot use its store, nothing else on that
 * backend can work, so this alert inhibits the symptoms (see alerts/alertmanager.ts), and keeps
 * firing for `storeOutageTail` after the store is back so that the inhibition outlasts the symptoms'
 * windows. Its configured `for` is shorter than theirs so it reaches Alertmanager first.
 *
 * Two rules under one name, told apart by `signal`, so each description can say what it measured:
 * - `health`: the servers' own view (`lock_store_up`), fed by every store call's outcome and
 *   latency. It is the one that sees a hung store (connections accepted, nothing answered): such a
 *   store completes few or no calls, so a share of failed calls has little or nothing to divide,
 *   while each call that outlives its timeout turns the server's view down.
 * - `errors`: the share of failed or refused store calls, as before. It still adds what the health
 *   state does not: a store that fails a large share of calls while answering the others (every
 *   success turns a server's view up again, so `lock_store_up` flickers and never stays 0 for the
 *   `for`), and servers that predate `lock_store_up`.
 * Both rules carry the same summary, so a notification grouping them has one title.
 */
function storeUnreachable(ctx: RuleContext): AlertingRule[] {
  const T = ctx.config.thresholds;
  const name = STORE_UNREACHABLE_ALERT;
  const keep = ctx.config.keepFiringFor[name] ?? storeOutageTail(ctx.config);
  const summary = 'Holdfast cannot reach its store: store calls are failing or hanging.';
  const aftermath =
    `Alerts it causes on this backend are inhibited while it fires, and it keeps firing for ${humanDuration(keep)} after the store is back, ` +
    `until their windows no longer hold the outage.`;
  const health = ctx.alert({
    name,
    action: 'page',
    expr: `count by (${ctx.by}) (${ctx.series(METRICS.lockStoreUp)} == 0)`,
    keepFiringFor: keep,
    labels: { signal: 'health' },
    summary,
    description:
      `{{ $value | humanize }} Holdfast server(s) on backend {{ $labels.backend }} have counted their store down (lock_store_up = 0) for ${humanDuration(ctx.pending(name))}: ` +
      `calls to it fail or outlive their timeout (a store that accepts connections but never answers counts too), so these servers answer NOT_LEADER at once ` +
      `and no lock can be taken, renewed or released. ${aftermath}`,
  });

  // The SQL store answers not_leader when PostgreSQL refuses connections or is read-only, etcd when it has
  // no leader, and the health check when a call outlives its timeout: all mean the store cannot serve.
  const window = T.storeErrorWindow;
  const calls = (failed?: true) =>
    `sum by (${ctx.by}) (rate(${ctx.series(METRICS.lockStoreSeconds, { series: 'count', match: failed ? { outcome: ['not_leader', 'error'] } : undefined })}[${window}]))`;
  // The window stretches a burst of failures to its own length (a 30 s burst keeps the share above the
  // threshold for about two minutes), so this signal waits the window on top of the configured `for`: a
  // burst the health signal rides out does not page here either, nor hold the symptoms back for `keep`.
  // Full outages page through the health signal at the configured `for`.
  const pending = promDuration(durationSeconds(ctx.pending(name)) + durationSeconds(window));
  const errors: AlertingRule = {
    ...ctx.alert({
      name,
      action: 'page',
      expr: `${calls(true)}\n/\n${calls()}\n> ${T.storeErrorShare}`,
      keepFiringFor: keep,
      labels: { signal: 'errors' },
      summary,
      description:
        `{{ $value | humanizePercentage }} of store calls on backend {{ $labels.backend }} failed or were refused over the last ${humanDuration(window)} ` +
        `(threshold ${percent(T.storeErrorShare)}, for ${humanDuration(pending)}): PostgreSQL or etcd is down, unreachable or failing, ` +
        `so locks cannot be taken, renewed or released reliably. ${aftermath}`,
    }),
    for: pending,
  };
  return [health, errors];
}

/**
 * Server-side signal on purpose: `lock_session_lost_total` is emitted by the
 * SDK inside client processes, which a Holdfast scrape job does not see.
 * Sessions the server expires for a missed heartbeat (`cause="ttl"`) are the
 * same event seen from the server, for every client, scraped or not.
 */
function sessionLossSpike(ctx: RuleContext): AlertingRule {
  const T = ctx.config.thresholds;
  const expired = `sum by (${ctx.by}) (increase(${ctx.series(METRICS.lockSessionExpiredTotal, { match: { cause: 'ttl' } })}[${SYMPTOM_WINDOWS.sessionLoss}]))`;
  const active = `max by (${ctx.by}) (${ctx.series(METRICS.lockSessionsActive)})`;
  const name = 'HoldfastSessionLossSpike';
  return ctx.alert({
    name,
    action: 'ticket',
    expr: `${expired}\n> clamp_min(${T.sessionTtlExpiryShare} * ${active}, ${T.sessionTtlExpiryMin})`,
    summary: 'Many Holdfast sessions are expiring because their heartbeats stopped arriving.',
    description:
      `{{ $value | humanize }} sessions on backend {{ $labels.backend }} expired for a missed heartbeat in the last ${humanDuration(SYMPTOM_WINDOWS.sessionLoss)} ` +
      `(more than ${percent(T.sessionTtlExpiryShare)} of active sessions and at least ${T.sessionTtlExpiryMin}, for ${humanDuration(ctx.pending(name))}); ` +
      `every lock they held was released and their holders must stop using its fencing token.`,
  });
}

function contentionExceeded(ctx: RuleContext): AlertingRule {
  const T = ctx.config.thresholds;
  requireLabel('backend', METRICS.lockContentionTotal);
  const exceeded = `sum by (${ctx.by}) (rate(${ctx.series(METRICS.lockContentionTotal, { match: { reason: 'exceeded' } })}[5m]))`;
  const acquires = `sum by (${ctx.by}) (rate(${ctx.series(METRICS.lockAcquireSeconds, { series: 'count' })}[5m]))`;
  const name = 'HoldfastContentionExceededSustained';
  return ctx.alert({
    name,
    action: 'ticket',
    expr: `${exceeded}\n/\n${acquires}\n> ${T.contentionExceededShare}`,
    summary: 'Holdfast keeps refusing acquires with CONTENTION_EXCEEDED.',
    description:
      `{{ $value | humanizePercentage }} of acquire requests on backend {{ $labels.backend }} were refused because a contention budget was spent ` +
      `(threshold ${percent(T.contentionExceededShare)}, sustained ${humanDuration(ctx.pending(name))}): some clients retry a hot key too eagerly.`,
  });
}

function waitersPilingUp(ctx: RuleContext): AlertingRule {
  const T = ctx.config.thresholds;
  const name = 'HoldfastWaitersPilingUp';
  return ctx.alert({
    name,
    action: 'ticket',
    expr: `sum by (${ctx.by}) (${ctx.series(METRICS.lockWaiters)}) > ${T.waiters}`,
    summary: 'Acquire requests are piling up waiting for locks on one Holdfast backend.',
    description:
      `{{ $value | humanize }} acquire requests are waiting server-side on backend {{ $labels.backend }} ` +
      `(threshold ${T.waiters}, for ${humanDuration(ctx.pending(name))}): a lock is held too long or releases are not reaching waiters.`,
  });
}

function waitFallback(ctx: RuleContext): AlertingRule {
  const T = ctx.config.thresholds;
  const waits = (match?: { outcome: 'fallback' }) =>
    `sum by (${ctx.by}) (rate(${ctx.series(METRICS.lockWaitSeconds, { series: 'count', match })}[${SYMPTOM_WINDOWS.waitFallback}]))`;
  const name = 'HoldfastWaitFallbackRate';
  return ctx.alert({
    name,
    action: 'ticket',
    expr: `${waits({ outcome: 'fallback' })}\n/\n${waits()}\n> ${T.waitFallbackShare}`,
    summary: 'Holdfast server-side waits are falling back to polling because watches are failing.',
    description:
      `{{ $value | humanizePercentage }} of server-side waits on backend {{ $labels.backend }} ended in the polling fallback ` +
      `(threshold ${percent(T.waitFallbackShare)}, for ${humanDuration(ctx.pending(name))}): release notifications are broken, so waiters learn of releases late.`,
  });
}

/** A 2 m rate (by default) with a 5 m `for`: one leader election (seconds) cannot fire it, a leaderless backend does. */
function notLeader(ctx: RuleContext): AlertingRule {
  const notLeaderRate = `sum by (${ctx.by}) (rate(${ctx.series(METRICS.lockAcquireSeconds, { series: 'count', match: { outcome: 'not_leader' } })}[${ctx.config.thresholds.notLeaderWindow}]))`;
  const name = 'HoldfastNotLeaderAnswers';
  return ctx.alert({
    name,
    action: 'page',
    expr: `${notLeaderRate} > 0`,
    summary: 'The Holdfast backend cannot take writes, so acquires are answered NOT_LEADER.',
    description:
      `Backend {{ $labels.backend }} has answered {{ printf "%.2f" $value }} acquires per second with NOT_LEADER for ${humanDuration(ctx.pending(name))}: ` +
      `there is no etcd leader or PostgreSQL is read-only, and no client can take a new lock.`,
  });
}

function storeSlow(ctx: RuleContext): AlertingRule {
  const T = ctx.config.thresholds;
  const buckets = ctx.series(METRICS.lockStoreSeconds, { series: 'bucket', match: { op: STORE_WRITE_OPS } });
  const name = 'HoldfastStoreSlow';
  return ctx.alert({
    name,
    action: 'ticket',
    expr: `histogram_quantile(0.99, sum by (${ctx.by}, le) (rate(${buckets}[${SYMPTOM_WINDOWS.storeSlow}])))\n> ${T.storeWriteP99Seconds}`,
    summary: 'Holdfast store writes on the request path are slow.',
    description:
      `p99 latency of ${STORE_WRITE_OPS.join('/')} on backend {{ $labels.backend }} is {{ $value | humanizeDuration }} ` +
      `(threshold ${T.storeWriteP99Seconds}s for ${humanDuration(ctx.pending(name))}); acquires and heartbeats slow down with it and sessions risk expiring.`,
  });
}

function deadlock(ctx: RuleContext): AlertingRule {
  const name = 'HoldfastDeadlockDetected';
  return ctx.alert({
    name,
    action: 'ticket',
    expr: `max by (${ctx.by}, instance) (${ctx.series(METRICS.lockDeadlockCycles)}) > 0`,
    summary: 'Sessions waiting on a Holdfast server form a cycle in the wait-for graph.',
    description:
      `{{ $value | humanize }} wait-for cycles have persisted for ${humanDuration(ctx.pending(name))} on {{ $labels.instance }} (backend {{ $labels.backend }}): ` +
      `clients acquire the same keys in different orders and keep timing each other out.`,
  });
}

function sweepLagging(ctx: RuleContext): AlertingRule {
  const limit = ctx.config.thresholds.sweepLagSeconds;
  const name = 'HoldfastSweepLagging';
  return ctx.alert({
    name,
    action: 'ticket',
    expr: `max by (${ctx.by}) (${ctx.series(METRICS.lockSweepLagSeconds)}) > ${limit}`,
    summary: 'The Holdfast sweeper is behind: expired sessions and locks are not being cleared.',
    description:
      `The oldest overdue expiry on backend {{ $labels.backend }} has waited {{ $value | humanizeDuration }} to be swept ` +
      `(threshold ${humanSeconds(limit)}, for ${humanDuration(ctx.pending(name))}): keys whose holders are gone stay locked until the sweeper catches up.`,
  });
}

export function healthAlertGroup(ctx: RuleContext): RuleGroup {
  return {
    name: 'holdfast-health',
    rules: [
      ...storeUnreachable(ctx),
      sessionLossSpike(ctx),
      contentionExceeded(ctx),
      waitersPilingUp(ctx),
      waitFallback(ctx),
      notLeader(ctx),
      storeSlow(ctx),
      deadlock(ctx),
      // One rule per policy with a maxHoldMillis, and the generic one (alerts/policy-alerts.ts).
      ...lockHeldTooLong(ctx),
      sweepLagging(ctx),
    ],
  };
}

/**
 * `up` carries no backend; a down target takes its backend from the last hour
 * of its own `lock_held` series (the last one if it switched stores), or
 * `backend="unknown"` if it was never scraped.
 */
function targetDownExpr(ctx: RuleContext): string {
  const keep = ['job', 'instance', ...(ctx.config.clusterLabel ? [ctx.config.clusterLabel] : [])].join(', ');
  const lastBackend =
    `topk by (${keep}) (1, count by (${keep}, backend) (last_over_time(${ctx.series(METRICS.lockHeld)}[1h])))`;
  const down = `${ctx.up} == 0`;
  return [
    `(${down}) * on (${keep}) group_left (backend) (0 * ${lastBackend})`,
    `or on (${keep})`,
    `label_replace(${down}, "backend", "unknown", "", "")`,
  ].join('\n');
}

/** Alerts on the monitoring pipeline itself. `up` is synthesised by Prometheus for every target. */
export function metaAlertGroup(ctx: RuleContext): RuleGroup {
  return {
    name: 'holdfast-meta',
    rules: [
      ctx.alert({
        name: TARGET_DOWN_ALERT,
        action: 'ticket',
        expr: targetDownExpr(ctx),
        summary: 'Prometheus cannot scrape a Holdfast server.',
        description:
          `Scrapes of {{ $labels.instance }} (job {{ $labels.job }}, backend {{ $labels.backend }}) have failed for ${humanDuration(ctx.pending(TARGET_DOWN_ALERT))} (up = {{ $value }}): ` +
          `that server is down or unreachable and its metrics are missing from every SLO figure.`,
      }),
      ctx.alert({
        name: TARGET_MISSING_ALERT,
        action: 'page',
        expr: `absent(${ctx.up} == 1)`,
        labels: FLEET_WIDE,
        summary: `No Holdfast server has been scraped successfully for ${humanDuration(ctx.pending(TARGET_MISSING_ALERT))}.`,
        description:
          `Prometheus has had no healthy target matching ${ctx.config.jobSelector} for ${humanDuration(ctx.pending(TARGET_MISSING_ALERT))} (absent = {{ $value }}): ` +
          `every Holdfast server is down or vanished from service discovery, and every SLO alert is blind.`,
      }),
      ctx.alert({
        name: WATCHDOG_ALERT,
        action: 'info',
        expr: 'vector(1)',
        labels: FLEET_WIDE,
        summary: 'Always firing: proves the Holdfast alerting pipeline delivers notifications.',
        description:
          `This alert fires forever by design (value {{ $value }}). Route it to a dead-man's-switch receiver; ` +
          `if that receiver stops hearing it, Prometheus or Alertmanager is broken.`,
      }),
    ],
  };
}
