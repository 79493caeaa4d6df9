/**
 * Renders the Grafana dashboards as JSON. Pure: returns path → content, so
 * `scripts/gen.ts` writes them and the freshness test compares them.
 */
import type { MonitoringConfig } from '../alerts/config.js';
import { overviewDashboard } from './overview.js';
import { sloDashboard } from './slo.js';

export const OVERVIEW_PATH = 'dashboards/holdfast-overview.json';
export const SLO_PATH = 'dashboards/holdfast-slo.json';

function render(builder: { build(): unknown }): string {
  return `${JSON.stringify(builder.build(), null, 2)}\n`;
}

export function dashboardFiles(config: MonitoringConfig): Record<string, string> {
  return {
    [OVERVIEW_PATH]: render(overviewDashboard(config)),
    [SLO_PATH]: render(sloDashboard(config)),
  };
}
