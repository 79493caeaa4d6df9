/**
 * The Alertmanager configuration that goes with the rules: a route tree on the
 * pinned labels (`service`, `severity`, `alertname`), grouping by alert and
 * backend (and cluster), and the inhibitions that keep a store outage to the
 * pages that name its cause. Receivers are placeholders: docs/monitoring.md
 * shows how to plug PagerDuty, Slack or a webhook into them.
 */
import { Document } from 'yaml';
import { SERVICE, SEVERITY, groupingLabels, type MonitoringConfig } from './config.js';
import { BURN_RATE_ALERTS } from './slo-alerts.js';
import { STORE_UNREACHABLE_ALERT, TARGET_DOWN_ALERT, TARGET_MISSING_ALERT, WATCHDOG_ALERT } from './health-alerts.js';

export const ALERTMANAGER_PATH = 'alerts/alertmanager/alertmanager.yml';

/** Receiver names: stable, so a fleet's own config can reference them. */
export const RECEIVERS = {
  pager: 'holdfast-pager',
  ticket: 'holdfast-ticket',
  info: 'holdfast-info',
  deadMansSwitch: 'holdfast-deadmansswitch',
} as const;

/** Where an alert with these labels must end up: the contract the route tests check. */
export function expectedReceiver(alertname: string, severity: string): string {
  if (alertname === WATCHDOG_ALERT) return RECEIVERS.deadMansSwitch;
  if (severity === SEVERITY.page) return RECEIVERS.pager;
  if (severity === SEVERITY.info) return RECEIVERS.info;
  return RECEIVERS.ticket;
}

/**
 * What a store outage causes on the same backend: burn rate, NOT_LEADER
 * answers, slow and failing store calls, waiters piling up, sessions expiring
 * for heartbeats that could not be stored, a sweeper that cannot sweep.
 */
export const STORE_OUTAGE_SYMPTOMS = [
  ...BURN_RATE_ALERTS,
  'HoldfastNotLeaderAnswers',
  'HoldfastStoreSlow',
  'HoldfastWaitersPilingUp',
  'HoldfastSessionLossSpike',
  'HoldfastWaitFallbackRate',
  'HoldfastSweepLagging',
] as const;

/**
 * What a server that cannot be scraped causes on its backend. Only tickets: a
 * warning never hides a page, so burn rate and NOT_LEADER still page while one
 * target is down (the other instances may be the ones failing).
 */
export const TARGET_DOWN_SYMPTOMS = ['HoldfastStoreSlow', 'HoldfastWaitersPilingUp', 'HoldfastSessionLossSpike'] as const;

export interface Inhibition {
  readonly source: string;
  readonly targets: readonly string[];
  /** Labels that must be equal on source and target (besides `service`). */
  readonly equal: readonly string[];
}

/**
 * An inhibition lasts as long as its source fires. The store-unreachable one must outlast the outage,
 * since its symptoms' windows still hold it afterwards: its source keeps firing for that long
 * (`keep_firing_for`, `storeOutageTail` in alerts/health-alerts.ts).
 */
export function inhibitions(config: MonitoringConfig): Inhibition[] {
  const grouping = groupingLabels(config);
  return [
    { source: STORE_UNREACHABLE_ALERT, targets: STORE_OUTAGE_SYMPTOMS, equal: grouping },
    { source: TARGET_DOWN_ALERT, targets: TARGET_DOWN_SYMPTOMS, equal: grouping },
    // The one per-instance alert: a down server's wait-for graph is unknown, not cyclic.
    { source: TARGET_DOWN_ALERT, targets: ['HoldfastDeadlockDetected'], equal: ['instance'] },
    // Every target gone: the per-target pages add nothing.
    { source: TARGET_MISSING_ALERT, targets: [TARGET_DOWN_ALERT], equal: [] },
  ];
}

const service = `service="${SERVICE}"`;
const oneOf = (names: readonly string[]) => (names.length === 1 ? `alertname="${names[0]}"` : `alertname=~"${names.join('|')}"`);
/** A placeholder that passes `amtool check-config` and delivers nowhere until replaced. */
const placeholder = (path: string) => ({ url: `http://127.0.0.1:9/holdfast/${path}`, send_resolved: true });

export function alertmanagerConfig(config: MonitoringConfig): Record<string, unknown> {
  const am = config.alertmanager;
  return {
    route: {
      receiver: RECEIVERS.ticket,
      group_by: ['alertname', ...groupingLabels(config)],
      group_wait: am.groupWait,
      group_interval: am.groupInterval,
      repeat_interval: am.repeatInterval,
      routes: [
        {
          receiver: RECEIVERS.deadMansSwitch,
          matchers: [service, `alertname="${WATCHDOG_ALERT}"`],
          group_wait: '0s',
          group_interval: am.watchdogRepeatInterval,
          repeat_interval: am.watchdogRepeatInterval,
        },
        { receiver: RECEIVERS.pager, matchers: [service, `severity="${SEVERITY.page}"`] },
        { receiver: RECEIVERS.ticket, matchers: [service, `severity="${SEVERITY.ticket}"`] },
        { receiver: RECEIVERS.info, matchers: [service, `severity="${SEVERITY.info}"`] },
      ],
    },
    inhibit_rules: inhibitions(config).map((rule) => ({
      source_matchers: [service, `alertname="${rule.source}"`],
      target_matchers: [service, oneOf(rule.targets)],
      equal: ['service', ...rule.equal],
    })),
    receivers: [
      { name: RECEIVERS.pager, webhook_configs: [placeholder('pager')] },
      { name: RECEIVERS.ticket, webhook_configs: [placeholder('ticket')] },
      // Info alerts need no action: no receiver config drops them.
      { name: RECEIVERS.info },
      { name: RECEIVERS.deadMansSwitch, webhook_configs: [placeholder('deadmansswitch')] },
    ],
  };
}

/** Receivers replaced (e.g. by a test's webhook): same route tree and inhibitions, other endpoints. */
export function withReceivers(amConfig: Record<string, unknown>, receivers: Record<string, unknown>[]): Record<string, unknown> {
  return { ...amConfig, receivers };
}

export function renderAlertmanagerConfig(config: MonitoringConfig): string {
  const doc = new Document(alertmanagerConfig(config));
  doc.commentBefore = [
    ' Generated by `npm run gen` (scripts/gen.ts) from alerts/alertmanager.ts. Do not edit: a test',
    ' regenerates this file and fails when it differs. Configure it in monitoring.config.yaml.',
    '',
    ' Holdfast alerts carry severity (critical pages, warning tickets, info), service="holdfast",',
    ' backend, and slo on burn-rate alerts (docs/contracts/C4-observability.md, "Alert labels").',
    ' The receivers below are placeholders that deliver nowhere (port 9 on loopback): replace their',
    ' webhook_configs with pagerduty_configs, slack_configs or your own webhook (docs/monitoring.md),',
    ' or mount this route tree under your own root route with `matchers: [service="holdfast"]`.',
  ].join('\n');
  return doc.toString({ lineWidth: 0 });
}
