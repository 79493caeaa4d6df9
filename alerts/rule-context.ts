/**
 * What every rule builder needs from the config: the grouping labels to
 * aggregate by, selectors that carry the job matchers, and `defineAlert` bound
 * to the config. One object, so no builder forgets the job selector.
 */
import type { MetricSpec } from '../contract/metric-table.js';
import type { LockPolicy } from '../contract/policies.js';
import { groupingLabels, type MonitoringConfig } from './config.js';
import { defineAlert, pendingFor, type AlertSpec, type AlertingRule } from './define-alert.js';
import { selector, type SelectorOptions } from './promql.js';

export interface RuleContext {
  readonly config: MonitoringConfig;
  /** The policies file the rules are made for (`npm run gen`: deploy/policies.yaml or `--policies FILE`). */
  readonly policies: readonly LockPolicy[];
  /** `backend` or `backend, cluster`: what every `by (…)` keeps. */
  readonly by: string;
  /** A table metric's selector with the job matchers first. */
  series(spec: MetricSpec, options?: SelectorOptions): string;
  /** `up` of the Holdfast scrape job(s). */
  readonly up: string;
  alert(spec: AlertSpec): AlertingRule;
  /** The `for` an alert will wait, for its description. */
  pending(name: string): string;
}

export function ruleContext(config: MonitoringConfig, policies: readonly LockPolicy[] = []): RuleContext {
  return {
    config,
    policies,
    by: groupingLabels(config).join(', '),
    series: (spec, options = {}) => selector(spec, { ...options, raw: [config.jobSelector, ...(options.raw ?? [])] }),
    up: `up{${config.jobSelector}}`,
    alert: (spec) => defineAlert(config, spec),
    pending(name) {
      const value = pendingFor(config, { name });
      if (!value) throw new Error(`no "for" configured for ${name}`);
      return value;
    },
  };
}
