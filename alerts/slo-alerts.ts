/**
 * Multi-window, multi-burn-rate alerts on S1 (SRE workbook, chapter 5). Both
 * windows must burn faster than the tier's factor: the long window proves the
 * burn is significant, the short one that it is still happening.
 */
import { SLO_NAME } from './config.js';
import type { AlertingRule } from './define-alert.js';
import type { RuleContext } from './rule-context.js';
import type { RuleGroup } from './rule-types.js';
import { COMPLIANCE_WINDOW, RECORDED, daysToExhaustion, sloModel, type BurnTier, type SloModel } from './slo.js';

export const FAST_BURN_ALERT = 'HoldfastErrorBudgetFastBurn';
export const SLOW_BURN_ALERT = 'HoldfastErrorBudgetSlowBurn';
export const BURN_RATE_ALERTS = [FAST_BURN_ALERT, SLOW_BURN_ALERT] as const;

function burnAlert(ctx: RuleContext, slo: SloModel, tier: BurnTier): AlertingRule {
  const paging = tier.action === 'page';
  const threshold = `(${tier.factor} * ${slo.errorBudget})`;
  return ctx.alert({
    name: paging ? FAST_BURN_ALERT : SLOW_BURN_ALERT,
    action: tier.action,
    expr: [
      `${RECORDED.errorRatio(tier.long)} > ${threshold}`,
      `and`,
      `${RECORDED.errorRatio(tier.short)} > ${threshold}`,
    ].join('\n'),
    for: tier.for,
    labels: { slo: SLO_NAME, long_window: tier.long, short_window: tier.short },
    summary: paging
      ? `Holdfast is failing lock requests fast enough to spend the ${COMPLIANCE_WINDOW} error budget within days.`
      : `Holdfast is failing lock requests steadily enough to spend the ${COMPLIANCE_WINDOW} error budget before the window ends.`,
    description:
      `Backend {{ $labels.backend }} answered {{ $value | humanizePercentage }} of acquire, renew and release ` +
      `requests with not_leader or error over the last ${tier.long} (still above the threshold over ${tier.short}). ` +
      `That is over ${tier.factor}x the ${slo.budgetPercent} budget of a ${slo.objectivePercent} objective: ` +
      `at this pace the ${COMPLIANCE_WINDOW} budget is gone in ${daysToExhaustion(tier.factor)}.`,
  });
}

export function sloAlertGroup(ctx: RuleContext): RuleGroup {
  const slo = sloModel(ctx.config);
  return { name: 'holdfast-slo-s1-alerts', rules: slo.burnTiers.map((tier) => burnAlert(ctx, slo, tier)) };
}
