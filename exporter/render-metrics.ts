/**
 * `/metrics`: Prometheus text format 0.0.4 by default, OpenMetrics 1.0 (with
 * exemplars) when the scraper's Accept header prefers it, as Prometheus does
 * when exemplar storage is on.
 */
import { Registry } from 'prom-client';
import { OPENMETRICS_CONTENT_TYPE, renderOpenMetrics } from './openmetrics.js';

export async function renderMetrics(registry: Registry, accept: string | undefined): Promise<{ contentType: string; body: string }> {
  if (prefersOpenMetrics(accept)) return { contentType: OPENMETRICS_CONTENT_TYPE, body: await renderOpenMetrics(registry) };
  return { contentType: Registry.PROMETHEUS_CONTENT_TYPE, body: await registry.metrics() };
}

/**
 * True when `application/openmetrics-text` is acceptable with a quality at
 * least that of `text/plain` (or text/plain is absent). A missing header, a
 * browser's Accept or curl's `*\/*` all get the classic text format.
 */
export function prefersOpenMetrics(accept: string | undefined): boolean {
  if (!accept) return false;
  let openMetrics = 0;
  let text = 0;
  for (const part of accept.split(',')) {
    const [type = '', ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    const q = params.map((p) => /^q=([0-9.]+)$/.exec(p)?.[1]).find((v) => v !== undefined);
    const quality = q === undefined ? 1 : Number(q);
    if (type === 'application/openmetrics-text') openMetrics = Math.max(openMetrics, quality);
    else if (type === 'text/plain') text = Math.max(text, quality);
  }
  return openMetrics > 0 && openMetrics >= text;
}
