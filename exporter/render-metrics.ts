/** `/metrics`: Prometheus text format, or OpenMetrics when the scraper asks for it. */
import type { Registry } from 'prom-client';

export async function renderMetrics(registry: Registry, _accept: string | undefined): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}
