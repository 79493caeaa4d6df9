/**
 * "Holdfast — availability SLO S1": the error budget over the compliance
 * window, the burn rate over every alerting window, and the burn-rate alerts'
 * state, so whoever is paged sees the same numbers the alert saw.
 */
import { DashboardBuilder, RowBuilder } from '@grafana/grafana-foundation-sdk/dashboard';
import * as units from '@grafana/grafana-foundation-sdk/units';
import { METRICS } from '../contract/metric-table.js';
import { groupingLabels, type MonitoringConfig } from '../alerts/config.js';
import { FAST_BURN_ALERT, SLOW_BURN_ALERT } from '../alerts/slo-alerts.js';
import { COMPLIANCE_WINDOW, RECORDED, sloModel, type SloModel } from '../alerts/slo.js';
import { BURN_UNIT } from './overview.js';
import { datasourceVariable, FILTER, labelVariable, stat, stateTimeline, timeseries, type Steps } from './panels.js';
import { dashboardQueries } from './queries.js';

export const SLO_UID = 'holdfast-slo';

/** Colour steps at each tier's factor: yellow at 1×, red at the fastest page. */
function burnSteps(slo: SloModel): Steps {
  const factors = [...new Set(slo.burnTiers.map((t) => t.factor))].sort((a, b) => a - b);
  const colors = ['yellow', 'orange', 'dark-orange', 'red'];
  return ['green', ...factors.map((factor, i): [number, string] => [factor, colors[Math.min(i, colors.length - 1)]!])];
}

export function sloDashboard(config: MonitoringConfig): DashboardBuilder {
  const by = groupingLabels(config).join(', ');
  const legend = groupingLabels(config).map((label) => `{{${label}}}`).join(' ');
  const slo = sloModel(config);
  const { availability, budgetRemaining, burnRate, recorded, clusterVariable } = dashboardQueries(config);
  const alertFilter = [...(clusterVariable ? [`${clusterVariable.name}=~"$${clusterVariable.name}"`] : []), FILTER.backend].join(', ');
  const burnAlerts = `${FAST_BURN_ALERT}|${SLOW_BURN_ALERT}`;
  const board = new DashboardBuilder('Holdfast — availability SLO S1')
    .uid(SLO_UID)
    .description(
      `S1: acquire, renew and release requests not answered not_leader or error, ${slo.objectivePercent} over ${COMPLIANCE_WINDOW}; ` +
        'error budget, burn rates and burn-rate alert state.',
    )
    .tags(['holdfast', 'slo', 'generated'])
    .refresh('1m')
    .time({ from: 'now-7d', to: 'now' })
    .timezone('browser')
    .editable()
    .withVariable(datasourceVariable());
  const fleet = dashboardQueries(config).clusterVariable;
  if (fleet) board.withVariable(labelVariable(fleet.name, fleet.name, fleet.selector, 'Fleet (cluster) the servers belong to.'));
  return board
    .withVariable(labelVariable('backend', 'backend', METRICS.lockHeld.name, 'Store backend the servers run on.'))
    .withRow(new RowBuilder(`Compliance window (${COMPLIANCE_WINDOW})`).id(100))
    .withPanel(
      stat({
        id: 1,
        title: `Availability (${COMPLIANCE_WINDOW})`,
        description:
          `S1 availability per backend over the last ${COMPLIANCE_WINDOW}, from increase() of every request and every bad answer ` +
          `over the whole window. Red: below the ${slo.objectivePercent} objective; stop risky changes until it recovers.`,
        unit: units.PercentUnit,
        decimals: 3,
        queries: [{ expr: availability, legend }],
        steps: ['red', [slo.objective, 'green']],
        width: 8,
      }),
    )
    .withPanel(
      stat({
        id: 2,
        title: `Error budget remaining (${COMPLIANCE_WINDOW})`,
        description:
          `Share of the ${slo.budgetPercent} error budget still unspent in the window; negative when overspent. Orange below 25 %: ` +
          'prioritise reliability work over features. Red: the objective is missed; review what spent it in the burn-rate panel.',
        unit: units.PercentUnit,
        decimals: 1,
        queries: [{ expr: budgetRemaining, legend }],
        steps: ['red', [0, 'orange'], [0.25, 'green']],
        width: 8,
      }),
    )
    .withPanel(
      stat({
        id: 3,
        title: `Bad answers (${COMPLIANCE_WINDOW})`,
        description:
          `Requests answered not_leader or error over the window, per backend and route. Compare with the request total: ` +
          'a few hundred bad answers out of millions is within budget; on a quiet service a handful may not be.',
        unit: units.Short,
        decimals: 0,
        queries: [{ expr: `sum by (${by}, route) (${recorded(RECORDED.errorsIncrease)})`, legend: `${legend} {{route}}` }],
        steps: ['green'],
        width: 8,
      }),
    )
    .withPanel(
      timeseries({
        id: 4,
        title: 'Error budget remaining over time',
        description:
          `Unspent share of the budget, computed at each point over the ${COMPLIANCE_WINDOW} before it. A falling line is spending; ` +
          'a steep drop is an incident (find it in the burn-rate panel), a slow slope is a chronic error rate worth a ticket.',
        unit: units.PercentUnit,
        queries: [{ expr: budgetRemaining, legend }],
        steps: ['red', [0, 'orange'], [0.25, 'green']],
        width: 24,
      }),
    )
    .withRow(new RowBuilder('Burn rates').id(101))
    .withPanel(
      timeseries(
        {
          id: 5,
          title: 'Burn rate per window',
          description:
            'Error ratio over each alerting window as a multiple of the budget rate (1× spends the budget exactly in ' +
            `${COMPLIANCE_WINDOW}). Dashed lines are the tiers: ` +
            slo.burnTiers.map((t) => `${t.factor}× over ${t.long} and ${t.short} (${t.action})`).join(', ') +
            '. Both windows of a tier above its line fire the alert; follow its runbook.',
          unit: BURN_UNIT,
          queries: slo.rateWindows.map((window) => ({ expr: burnRate(window), legend: `${window} ${legend}` })),
          steps: burnSteps(slo),
          width: 24,
          height: 9,
          min: 0,
        },
        { thresholdLines: true },
      ),
    )
    .withPanel(
      timeseries({
        id: 6,
        title: 'S1 requests and bad answers (5 m rate)',
        description:
          'Requests per second that count toward S1, and those answered not_leader or error, per backend and route. A bad-answer ' +
          'line on only one route points at that code path; on all routes at the backend (see the overview\'s store panels).',
        unit: units.RequestsPerSecond,
        queries: [
          { expr: `sum by (${by}, route) (${recorded(RECORDED.requestsRate('5m'))})`, legend: `requests ${legend} {{route}}` },
          { expr: `sum by (${by}, route) (${recorded(RECORDED.errorsRate('5m'))})`, legend: `bad ${legend} {{route}}` },
        ],
        steps: ['green'],
        width: 24,
        min: 0,
      }),
    )
    .withRow(new RowBuilder('Alerts').id(102))
    .withPanel(
      stateTimeline(
        {
          id: 7,
          title: 'Burn-rate alert state',
          description:
            'When each burn-rate alert was pending or firing, per backend and window pair (from Prometheus\'s ALERTS series). ' +
            'Firing means someone was paged (critical) or a ticket was opened (warning); pending that the `for` clause is still counting.',
          unit: units.Short,
          queries: [
            {
              expr: `max by (alertname, alertstate, ${by}, long_window) (ALERTS{alertname=~"${burnAlerts}", ${alertFilter}})`,
              legend: `{{alertname}} {{long_window}} ${legend} {{alertstate}}`,
            },
          ],
          steps: ['transparent', [1, 'red']],
          width: 24,
        },
        'active',
      ),
    );
}
