/**
 * Lock-health alerts beside the SLO: symptoms that hurt users before the
 * budget shows it (sessions dying, waiters piling up, broken watches), the
 * backend refusing writes, and alerts on the monitoring itself.
 *
 * Known gap: no metric in the contract carries the age of a held lock, so
 * "lock held past a threshold" cannot be alerted on. Operators find old locks
 * on the console's /locks page (grantedAt); see docs/monitoring.md.
 */
import { METRICS } from '../contract/metric-table.js';
import { HEALTH_THRESHOLDS as T, HOLDFAST_JOB, STORE_WRITE_OPS } from './config.js';
import { defineAlert, type AlertingRule } from './define-alert.js';
import { requireLabel, selector } from './promql.js';
import type { RuleGroup } from './rule-types.js';

const BY = 'backend';
const job = `job="${HOLDFAST_JOB}"`;
const percent = (share: number) => `${Number((share * 100).toPrecision(6))}%`;

/**
 * Server-side signal on purpose: `lock_session_lost_total` is emitted by the
 * SDK inside client processes, which a Holdfast scrape job does not see.
 * Sessions the server expires for a missed heartbeat (`cause="ttl"`) are the
 * same event seen from the server, for every client, scraped or not.
 */
function sessionLossSpike(): AlertingRule {
  const expired = `sum by (${BY}) (increase(${selector(METRICS.lockSessionExpiredTotal, { match: { cause: 'ttl' } })}[10m]))`;
  const active = `max by (${BY}) (${selector(METRICS.lockSessionsActive)})`;
  return defineAlert({
    name: 'HoldfastSessionLossSpike',
    severity: 'warning',
    expr: `${expired}\n> clamp_min(${T.sessionTtlExpiryShare} * ${active}, ${T.sessionTtlExpiryMin})`,
    for: '5m',
    summary: 'Many Holdfast sessions are expiring because their heartbeats stopped arriving.',
    description:
      `{{ $value | humanize }} sessions on backend {{ $labels.backend }} expired for a missed heartbeat in the last 10 minutes ` +
      `(more than ${percent(T.sessionTtlExpiryShare)} of active sessions and at least ${T.sessionTtlExpiryMin}); ` +
      `every lock they held was released and their holders must stop using its fencing token.`,
  });
}

function contentionExceeded(): AlertingRule {
  const exceeded = `sum by (${requireLabel(BY, METRICS.lockContentionTotal)}) (rate(${selector(METRICS.lockContentionTotal, { match: { reason: 'exceeded' } })}[5m]))`;
  const acquires = `sum by (${BY}) (rate(${selector(METRICS.lockAcquireSeconds, { series: 'count' })}[5m]))`;
  return defineAlert({
    name: 'HoldfastContentionExceededSustained',
    severity: 'warning',
    expr: `${exceeded}\n/\n${acquires}\n> ${T.contentionExceededShare}`,
    for: '15m',
    summary: 'Holdfast keeps refusing acquires with CONTENTION_EXCEEDED.',
    description:
      `{{ $value | humanizePercentage }} of acquire requests on backend {{ $labels.backend }} were refused because a contention budget was spent ` +
      `(threshold ${percent(T.contentionExceededShare)}, sustained 15 minutes): some clients retry a hot key too eagerly.`,
  });
}

function waitersPilingUp(): AlertingRule {
  return defineAlert({
    name: 'HoldfastWaitersPilingUp',
    severity: 'warning',
    expr: `sum by (${BY}) (${selector(METRICS.lockWaiters)}) > ${T.waiters}`,
    for: '10m',
    summary: 'Acquire requests are piling up waiting for locks on one Holdfast backend.',
    description:
      `{{ $value | humanize }} acquire requests are waiting server-side on backend {{ $labels.backend }} ` +
      `(threshold ${T.waiters}, for 10 minutes): a lock is held too long or releases are not reaching waiters.`,
  });
}

function waitFallback(): AlertingRule {
  const waits = (match?: { outcome: 'fallback' }) =>
    `sum by (${BY}) (rate(${selector(METRICS.lockWaitSeconds, { series: 'count', match })}[10m]))`;
  return defineAlert({
    name: 'HoldfastWaitFallbackRate',
    severity: 'warning',
    expr: `${waits({ outcome: 'fallback' })}\n/\n${waits()}\n> ${T.waitFallbackShare}`,
    for: '15m',
    summary: 'Holdfast server-side waits are falling back to polling because watches are failing.',
    description:
      `{{ $value | humanizePercentage }} of server-side waits on backend {{ $labels.backend }} ended in the polling fallback ` +
      `(threshold ${percent(T.waitFallbackShare)}): release notifications are broken, so waiters learn of releases late.`,
  });
}

/** A 2 m rate with a 5 m `for`: one leader election (seconds) cannot fire it, a leaderless backend does. */
function notLeader(): AlertingRule {
  const notLeaderRate = `sum by (${BY}) (rate(${selector(METRICS.lockAcquireSeconds, { series: 'count', match: { outcome: 'not_leader' } })}[2m]))`;
  return defineAlert({
    name: 'HoldfastNotLeaderAnswers',
    severity: 'critical',
    expr: `${notLeaderRate} > 0`,
    for: '5m',
    summary: 'The Holdfast backend cannot take writes, so acquires are answered NOT_LEADER.',
    description:
      `Backend {{ $labels.backend }} has answered {{ printf "%.2f" $value }} acquires per second with NOT_LEADER for 5 minutes: ` +
      `there is no etcd leader or PostgreSQL is read-only, and no client can take a new lock.`,
  });
}

function storeSlow(): AlertingRule {
  const buckets = selector(METRICS.lockStoreSeconds, { series: 'bucket', match: { op: STORE_WRITE_OPS } });
  return defineAlert({
    name: 'HoldfastStoreSlow',
    severity: 'warning',
    expr: `histogram_quantile(0.99, sum by (${BY}, le) (rate(${buckets}[5m])))\n> ${T.storeWriteP99Seconds}`,
    for: '10m',
    summary: 'Holdfast store writes on the request path are slow.',
    description:
      `p99 latency of ${STORE_WRITE_OPS.join('/')} on backend {{ $labels.backend }} is {{ $value | humanizeDuration }} ` +
      `(threshold ${T.storeWriteP99Seconds}s for 10 minutes); acquires and heartbeats slow down with it and sessions risk expiring.`,
  });
}

function deadlock(): AlertingRule {
  return defineAlert({
    name: 'HoldfastDeadlockDetected',
    severity: 'warning',
    expr: `max by (${BY}, instance) (${selector(METRICS.lockDeadlockCycles)}) > 0`,
    for: '5m',
    summary: 'Sessions waiting on a Holdfast server form a cycle in the wait-for graph.',
    description:
      `{{ $value | humanize }} wait-for cycles have persisted for 5 minutes on {{ $labels.instance }} (backend {{ $labels.backend }}): ` +
      `clients acquire the same keys in different orders and keep timing each other out.`,
  });
}

export function healthAlertGroup(): RuleGroup {
  return {
    name: 'holdfast-health',
    rules: [sessionLossSpike(), contentionExceeded(), waitersPilingUp(), waitFallback(), notLeader(), storeSlow(), deadlock()],
  };
}

/** Alerts on the monitoring pipeline itself. `up` is synthesised by Prometheus for every target. */
export function metaAlertGroup(): RuleGroup {
  return {
    name: 'holdfast-meta',
    rules: [
      defineAlert({
        name: 'HoldfastTargetDown',
        severity: 'warning',
        expr: `up{${job}} == 0`,
        for: '5m',
        summary: 'Prometheus cannot scrape a Holdfast server.',
        description:
          `Scrapes of {{ $labels.instance }} (job {{ $labels.job }}) have failed for 5 minutes (up = {{ $value }}): ` +
          `that server is down or unreachable and its metrics are missing from every SLO figure.`,
      }),
      defineAlert({
        name: 'HoldfastTargetMissing',
        severity: 'critical',
        expr: `absent(up{${job}} == 1)`,
        for: '5m',
        summary: 'No Holdfast server has been scraped successfully for 5 minutes.',
        description:
          `Prometheus has no healthy target in job ${HOLDFAST_JOB} (absent = {{ $value }}): every Holdfast server is down or vanished from ` +
          `service discovery, and every SLO alert is blind.`,
      }),
      defineAlert({
        name: 'HoldfastWatchdog',
        severity: 'info',
        expr: 'vector(1)',
        summary: 'Always firing: proves the Holdfast alerting pipeline delivers notifications.',
        description:
          `This alert fires forever by design (value {{ $value }}). Route it to a dead-man's-switch receiver; ` +
          `if that receiver stops hearing it, Prometheus or Alertmanager is broken.`,
      }),
    ],
  };
}
