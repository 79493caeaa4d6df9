/**
 * The one function every alert goes through. It adds `severity`, the summary,
 * the templated description and `runbook_url`, so no alert can ship without a
 * runbook link and every link follows one scheme.
 */
import { RUNBOOK_BASE_URL } from './config.js';

/** `critical` pages, `warning` is a ticket, `info` needs no action. */
export const SEVERITIES = ['critical', 'warning', 'info'] as const;
export type Severity = (typeof SEVERITIES)[number];

export interface AlertSpec {
  /** CamelCase with the `Holdfast` prefix. */
  readonly name: string;
  readonly severity: Severity;
  readonly expr: string;
  readonly for?: string;
  /** One sentence, no template: it becomes the notification title. */
  readonly summary: string;
  /** Uses `{{ $value }}` (through a humanize filter) and labels to say what is happening now. */
  readonly description: string;
  /** Extra static labels (e.g. which burn-rate windows matched). */
  readonly labels?: Readonly<Record<string, string>>;
}

/** A Prometheus alerting rule as it is written to the YAML file. */
export interface AlertingRule {
  alert: string;
  expr: string;
  for?: string;
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

export function runbookUrl(alertName: string): string {
  return `${RUNBOOK_BASE_URL}${runbookSlug(alertName)}.md`;
}

export function defineAlert(spec: AlertSpec): AlertingRule {
  if (!/^Holdfast[A-Z][A-Za-z0-9]*$/.test(spec.name)) {
    throw new Error(`alert name "${spec.name}" must be CamelCase with the Holdfast prefix`);
  }
  // Key order is the order readers expect in rule files: alert, expr, for, labels, annotations.
  return {
    alert: spec.name,
    expr: spec.expr,
    ...(spec.for ? { for: spec.for } : {}),
    labels: { severity: spec.severity, ...spec.labels },
    annotations: {
      summary: spec.summary,
      description: spec.description,
      runbook_url: runbookUrl(spec.name),
    },
  };
}
