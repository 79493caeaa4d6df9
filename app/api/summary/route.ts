/** The overview (A5), normalised, plus SLO burn rate from Prometheus and Grafana links when configured. */
import { requireSession } from '../../lib/server/auth';
import { grafanaUrl, prometheusUrl } from '../../lib/server/config';
import { readSloFromPrometheus } from '../../lib/server/prometheus';
import { normalizeSummary } from '../../lib/server/summary';
import { callServer, relay } from '../../lib/server/upstream';

export const dynamic = 'force-dynamic';

/** The generated dashboards' uids (dashboards/holdfast-overview.json, holdfast-slo.json). */
const GRAFANA_OVERVIEW_PATH = '/d/holdfast-overview';
const GRAFANA_SLO_PATH = '/d/holdfast-slo';

export async function GET(): Promise<Response> {
  const session = await requireSession();
  if (session instanceof Response) return session;
  const [result, slo] = await Promise.all([callServer<unknown>('/v1/admin/summary', { token: session.token }), readSloFromPrometheus()]);
  if (!result.ok) return relay(result);
  const overview = normalizeSummary(result.body, Date.now());
  if (slo) overview.slo = { ...overview.slo, ...slo };
  const grafana = grafanaUrl();
  if (grafana) {
    overview.links.grafana = `${grafana}${GRAFANA_OVERVIEW_PATH}`;
    overview.links.grafanaSlo = `${grafana}${GRAFANA_SLO_PATH}`;
  }
  const prometheus = prometheusUrl();
  if (prometheus) overview.links.prometheus = prometheus;
  return Response.json(overview, { headers: { 'cache-control': 'no-store' } });
}
