/**
 * OpenMetrics 1.0 text for a prom-client Registry, with exemplars.
 *
 * Why not `registry.setContentType(OPENMETRICS)`: prom-client renders
 * OpenMetrics by renaming every counter object in place (`lock_release_total`
 * becomes `lock_release`), so the same registry would afterwards serve the
 * pinned Prometheus names wrong. This writer reads the metrics and mutates nothing.
 */
import type { Registry } from 'prom-client';

export const OPENMETRICS_CONTENT_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8';

interface Sample {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
  exemplar?: { labelSet: Record<string, string>; value: number; timestamp?: number } | null;
}

interface Family {
  name: string;
  help: string;
  type: string;
  values: Sample[];
}

export async function renderOpenMetrics(registry: Registry): Promise<string> {
  // getMetricsAsArray() is typed as plain objects; at run time they are the metric instances.
  const metrics = registry.getMetricsAsArray() as unknown as { get(): Promise<Family> }[];
  const families = await Promise.all(metrics.map((metric) => metric.get()));
  const lines: string[] = [];
  for (const family of families) {
    const isCounter = family.type === 'counter';
    // OpenMetrics names the counter family without `_total` and every sample with it.
    const name = isCounter ? family.name.replace(/_total$/, '') : family.name;
    lines.push(`# HELP ${name} ${escapeText(family.help)}`);
    lines.push(`# TYPE ${name} ${openMetricsType(family.type)}`);
    for (const sample of family.values) {
      const sampleName = isCounter ? `${name}_total` : (sample.metricName ?? name);
      let line = `${sampleName}${formatLabels(sample.labels)} ${formatNumber(sample.value)}`;
      const exemplar = sample.exemplar;
      if (exemplar && Object.keys(exemplar.labelSet).length > 0) {
        line += ` # ${formatLabels(exemplar.labelSet)} ${formatNumber(exemplar.value)}`;
        if (exemplar.timestamp !== undefined) line += ` ${exemplar.timestamp}`;
      }
      lines.push(line);
    }
  }
  lines.push('# EOF');
  return `${lines.join('\n')}\n`;
}

function openMetricsType(type: string): string {
  return type === 'counter' || type === 'gauge' || type === 'histogram' || type === 'summary' ? type : 'unknown';
}

function formatLabels(labels: Record<string, string | number>): string {
  const pairs = Object.entries(labels).map(([name, value]) => `${name}="${escapeText(String(value))}"`);
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
}

function formatNumber(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

/** OpenMetrics escapes backslash, newline and double quote in HELP text and label values alike. */
function escapeText(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}
