/**
 * Multi-window, multi-burn-rate alerts on S1 (SRE workbook, chapter 5). Both
 * windows must burn faster than the tier's factor: the long window proves the
 * burn is significant, the short one that it is still happening.
 */
import { defineAlert, type AlertingRule } from './define-alert.js';
import type { RuleGroup } from './rule-types.js';
import {
  BUDGET_PERCENT,
  BURN_TIERS,
  COMPLIANCE_WINDOW,
  ERROR_BUDGET,
  OBJECTIVE_PERCENT,
  RECORDED,
  daysToExhaustion,
  type BurnTier,
} from './slo.js';

export const FAST_BURN_ALERT = 'HoldfastErrorBudgetFastBurn';
export const SLOW_BURN_ALERT = 'HoldfastErrorBudgetSlowBurn';

function burnAlert(tier: BurnTier): AlertingRule {
  const name = tier.severity === 'critical' ? FAST_BURN_ALERT : SLOW_BURN_ALERT;
  const threshold = `(${tier.factor} * ${ERROR_BUDGET})`;
  return defineAlert({
    name,
    severity: tier.severity,
    expr: [
      `${RECORDED.errorRatio(tier.long)} > ${threshold}`,
      `and`,
      `${RECORDED.errorRatio(tier.short)} > ${threshold}`,
    ].join('\n'),
    for: tier.for,
    labels: { long_window: tier.long, short_window: tier.short },
    summary:
      tier.severity === 'critical'
        ? `Holdfast is failing lock requests fast enough to spend the ${COMPLIANCE_WINDOW} error budget within days.`
        : `Holdfast is failing lock requests steadily enough to spend the ${COMPLIANCE_WINDOW} error budget before the window ends.`,
    description:
      `Backend {{ $labels.backend }} answered {{ $value | humanizePercentage }} of acquire, renew and release ` +
      `requests with not_leader or error over the last ${tier.long} (still above the threshold over ${tier.short}). ` +
      `That is over ${tier.factor}x the ${BUDGET_PERCENT} budget of a ${OBJECTIVE_PERCENT} objective: ` +
      `at this pace the ${COMPLIANCE_WINDOW} budget is gone in ${daysToExhaustion(tier.factor)}.`,
  });
}

export function sloAlertGroup(): RuleGroup {
  return { name: 'holdfast-slo-s1-alerts', rules: BURN_TIERS.map(burnAlert) };
}
