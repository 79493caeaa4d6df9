/**
 * The one function every alert goes through. It adds the pinned labels
 * (`severity` from the alert's action, `service`), the summary, the templated
 * description, the configured `for` and `runbook_url`, so no alert can ship
 * without a runbook link or a routing label, and every link follows one scheme.
 */
import { SERVICE, SEVERITY, type Action, type MonitoringConfig } from './config.js';

/** `critical` pages, `warning` is a ticket, `info` needs no action. */
export const SEVERITIES = Object.values(SEVERITY);
export type Severity = (typeof SEVERITY)[Action];

export interface AlertSpec {
  /** CamelCase with the `Holdfast` prefix. */
  readonly name: string;
  readonly action: Action;
  readonly expr: string;
  /**
   * Pending duration when the alert is not configured in `config.for` (burn-rate
   * tiers carry their own). Alerts that are configured must not pass one.
   */
  readonly for?: string;
  /**
   * How long the alert keeps firing after its expression turned false (`keep_firing_for`), when the
   * alert is not configured in `config.keepFiringFor`. For a root cause whose inhibition must outlast it.
   */
  readonly keepFiringFor?: string;
  /** One sentence, no template: it becomes the notification title. */
  readonly summary: string;
  /** Uses `{{ $value }}` (through a humanize filter) and labels to say what is happening now. */
  readonly description: string;
  /** Extra static labels (the SLO name, which burn-rate windows matched, `backend="all"` on fleet-wide alerts). */
  readonly labels?: Readonly<Record<string, string>>;
}

/** A Prometheus alerting rule as it is written to the YAML file. */
export interface AlertingRule {
  alert: string;
  expr: string;
  for?: string;
  keep_firing_for?: string;
  labels: Record<string, string>;
  annotations: { summary: string; description: string; runbook_url: string };
}

/** `HoldfastWaitersPilingUp` → `holdfast-waiters-piling-up` (runbook file slug). */
export function runbookSlug(alertName: string): string {
  return alertName
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1-$2')
    .toLowerCase();
}

/** Repository path of an alert's runbook, relative to the repository root. */
export function runbookPath(alertName: string): string {
  return `runbooks/${runbookSlug(alertName)}.md`;
}

export function runbookUrl(config: MonitoringConfig, alertName: string): string {
  return `${config.runbookBaseUrl}${runbookSlug(alertName)}.md`;
}

/** The `for` an alert waits: its configured duration, else the spec's own. */
export function pendingFor(config: MonitoringConfig, spec: Pick<AlertSpec, 'name' | 'for'>): string | undefined {
  return config.for[spec.name] ?? spec.for;
}

/** How long an alert keeps firing after its condition ends: configured, else the spec's own, else not at all. */
export function keepFiringFor(config: MonitoringConfig, spec: Pick<AlertSpec, 'name' | 'keepFiringFor'>): string | undefined {
  return config.keepFiringFor[spec.name] ?? spec.keepFiringFor;
}

export function defineAlert(config: MonitoringConfig, spec: AlertSpec): AlertingRule {
  if (!/^Holdfast[A-Z][A-Za-z0-9]*$/.test(spec.name)) {
    throw new Error(`alert name "${spec.name}" must be CamelCase with the Holdfast prefix`);
  }
  const pending = pendingFor(config, spec);
  const keep = keepFiringFor(config, spec);
  // Key order is the order readers expect in rule files: alert, expr, for, keep_firing_for, labels, annotations.
  return {
    alert: spec.name,
    expr: spec.expr,
    ...(pending ? { for: pending } : {}),
    ...(keep ? { keep_firing_for: keep } : {}),
    labels: { severity: SEVERITY[spec.action], service: SERVICE, ...spec.labels },
    annotations: {
      summary: spec.summary,
      description: spec.description,
      runbook_url: runbookUrl(config, spec.name),
    },
  };
}
