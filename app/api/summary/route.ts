/** The overview (A5), normalised, plus SLO burn rate from Prometheus and Grafana links when configured. */
import { requireSession } from '../../lib/server/auth';
import { grafanaUrl, prometheusUrl } from '../../lib/server/config';
import { readSloFromPrometheus } from '../../lib/server/prometheus';
import { normalizeSummary } from '../../lib/server/summary';
import { callServer, relay } from '../../lib/server/upstream';

export const dynamic = 'force-dynamic';

/** The generated dashboard's uid (dashboards/). */
const GRAFANA_DASHBOARD_PATH = '/d/holdfast-overview';

export async function GET(): Promise<Response> {
  const session = await requireSession();
  if (session instanceof Response) return session;
  const [result, slo] = await Promise.all([callServer<unknown>('/v1/admin/summary', { token: session.token }), readSloFromPrometheus()]);
  if (!result.ok) return relay(result);
  const overview = normalizeSummary(result.body, null, Date.now());
  if (slo) overview.slo = { ...overview.slo, ...slo };
  const grafana = grafanaUrl();
  if (grafana) overview.links.grafana = `${grafana}${GRAFANA_DASHBOARD_PATH}`;
  const prometheus = prometheusUrl();
  if (prometheus) overview.links.prometheus = prometheus;
  return Response.json(overview, { headers: { 'cache-control': 'no-store' } });
}
