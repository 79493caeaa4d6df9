/**
 * Recording rules for the S1 SLI. Per window they record, per route (L4, L5,
 * L6), the request rate and the bad-answer rate, then one error ratio per
 * backend (and cluster, when configured). Routes are recorded separately
 * because adding three vectors with `+` would drop a backend that has, say, no
 * renews yet; summing one recorded name across its `route` label does not.
 */
import type { RuleContext } from './rule-context.js';
import type { RecordingRule, RuleGroup } from './rule-types.js';
import { COMPLIANCE_WINDOW, RECORDED, SLO_ROUTES, sloModel } from './slo.js';

type RangeFunction = 'rate' | 'increase';

/** A matcher leaving out outcomes S1 does not count (a draining instance's refusals). */
function excluding(outcomes: readonly string[]): string[] {
  return outcomes.length === 0 ? [] : [`outcome!~"${outcomes.join('|')}"`];
}

function perRouteRules(ctx: RuleContext, fn: RangeFunction, window: string, requests: string, errors: string): RecordingRule[] {
  const rules: RecordingRule[] = [];
  for (const r of SLO_ROUTES) {
    rules.push({
      record: requests,
      expr: `sum by (${ctx.by}) (${fn}(${ctx.series(r.spec, { series: r.series, raw: excluding(r.excludedOutcomes) })}[${window}]))`,
      labels: { route: r.route },
    });
  }
  for (const r of SLO_ROUTES) {
    const bad = ctx.series(r.spec, { series: r.series, match: { outcome: r.badOutcomes } });
    rules.push({
      record: errors,
      expr: `sum by (${ctx.by}) (${fn}(${bad}[${window}]))`,
      labels: { route: r.route },
    });
  }
  return rules;
}

/**
 * Errors over requests per backend. A backend with traffic but no bad answer
 * has no error series at all, so `or 0 * requests` turns "absent" into 0.
 */
function ratioRule(ctx: RuleContext, record: string, requests: string, errors: string): RecordingRule {
  return {
    record,
    expr: [
      `(`,
      `  sum by (${ctx.by}) (${errors})`,
      `  or`,
      `  0 * sum by (${ctx.by}) (${requests})`,
      `)`,
      `/`,
      `sum by (${ctx.by}) (${requests})`,
    ].join('\n'),
  };
}

/** Windows the burn-rate alerts read; evaluated at the global interval. */
export function sloRateGroup(ctx: RuleContext): RuleGroup {
  const rules: RecordingRule[] = [{ record: RECORDED.errorBudget, expr: `vector(${sloModel(ctx.config).errorBudget})` }];
  for (const window of sloModel(ctx.config).rateWindows) {
    const requests = RECORDED.requestsRate(window);
    const errors = RECORDED.errorsRate(window);
    rules.push(...perRouteRules(ctx, 'rate', window, requests, errors));
    rules.push(ratioRule(ctx, RECORDED.errorRatio(window), requests, errors));
  }
  return { name: 'holdfast-slo-s1-burn-rate', rules };
}

/**
 * The compliance-window SLI from `increase` over the whole window (not an
 * average of short ratios, which overweights quiet hours). It reads 30 days of
 * samples, so it runs every 5 minutes rather than at every evaluation.
 */
export function sloComplianceGroup(ctx: RuleContext): RuleGroup {
  const rules = [
    ...perRouteRules(ctx, 'increase', COMPLIANCE_WINDOW, RECORDED.requestsIncrease, RECORDED.errorsIncrease),
    ratioRule(ctx, RECORDED.errorRatioCompliance, RECORDED.requestsIncrease, RECORDED.errorsIncrease),
  ];
  return { name: 'holdfast-slo-s1-compliance', interval: '5m', rules };
}
