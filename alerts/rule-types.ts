/** Shapes of the Prometheus rule file (https://prometheus.io/docs/prometheus/latest/configuration/recording_rules/). */
import type { AlertingRule } from './define-alert.js';

export interface RecordingRule {
  record: string;
  expr: string;
  labels?: Record<string, string>;
}

export interface RuleGroup {
  name: string;
  /** Omitted: the global `evaluation_interval`. */
  interval?: string;
  rules: (RecordingRule | AlertingRule)[];
}

export interface RuleFile {
  groups: RuleGroup[];
}
