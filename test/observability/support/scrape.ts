/**
 * Scrapes a server's /metrics and parses it with a Prometheus text-format
 * parser (parse-prometheus-text-format), so tests read what a Prometheus server
 * would, not prom-client's objects.
 *
 * That parser (1.1.1) folds every labelled histogram of a family into one
 * sample and drops its labels, so histogram families are handed to it as their
 * three plain sample families (`_bucket`, `_sum`, `_count`, labels intact) and
 * reassembled here, one series per label set.
 */
import parsePrometheusTextFormat, { type ParsedFamily } from 'parse-prometheus-text-format';

export type FamilyType = 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';

export interface Series {
  labels: Record<string, string>;
  /** Counters, gauges, untyped. */
  value?: number;
  /** Histograms: upper bound → cumulative count (+Inf as Infinity). */
  buckets?: Map<number, number>;
  count?: number;
  sum?: number;
}

export interface Family {
  name: string;
  help: string;
  type: FamilyType;
  series: Series[];
}

export interface Scrape {
  text: string;
  contentType: string;
  families: Map<string, Family>;
}

export async function scrape(baseUrl: string): Promise<Scrape> {
  const response = await fetch(`${baseUrl}/metrics`);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  const text = await response.text();
  return { text, contentType: response.headers.get('content-type') ?? '', families: parseExposition(text) };
}

export function parseExposition(text: string): Map<string, Family> {
  const histograms = new Set([...text.matchAll(/^# TYPE (\S+) histogram$/gm)].map((m) => m[1]!));
  const flattened = text.replace(/^# TYPE (\S+) histogram$/gm, '# TYPE $1 untyped');
  // Interleaved `_bucket` / `_sum` / `_count` lines come back as many same-named families: join them.
  const parsed = new Map<string, ParsedFamily>();
  for (const family of parsePrometheusTextFormat(flattened)) {
    const seen = parsed.get(family.name);
    if (seen) seen.metrics.push(...family.metrics);
    else parsed.set(family.name, { ...family, metrics: [...family.metrics] });
  }
  const families = new Map<string, Family>();
  const histogramParts = new Set([...histograms].flatMap((h) => [h, `${h}_bucket`, `${h}_sum`, `${h}_count`]));
  for (const family of parsed.values()) {
    if (histogramParts.has(family.name)) continue;
    families.set(family.name, {
      name: family.name,
      help: family.help,
      type: family.type,
      series: family.metrics.map((m) => ({ labels: m.labels ?? {}, value: Number(m.value) })),
    });
  }
  for (const name of histograms) {
    const series = new Map<string, Series>();
    const seriesOf = (labels: Record<string, string>) => {
      const id = seriesId(labels);
      let entry = series.get(id);
      if (!entry) series.set(id, (entry = { labels, buckets: new Map() }));
      return entry;
    };
    for (const sample of parsed.get(`${name}_bucket`)?.metrics ?? []) {
      const { le, ...labels } = sample.labels ?? {};
      seriesOf(labels).buckets!.set(le === '+Inf' ? Infinity : Number(le), Number(sample.value));
    }
    for (const sample of parsed.get(`${name}_sum`)?.metrics ?? []) seriesOf(sample.labels ?? {}).sum = Number(sample.value);
    for (const sample of parsed.get(`${name}_count`)?.metrics ?? []) seriesOf(sample.labels ?? {}).count = Number(sample.value);
    families.set(name, { name, help: parsed.get(name)?.help ?? '', type: 'HISTOGRAM', series: [...series.values()] });
  }
  return families;
}

/** A series identity independent of label order. */
export function seriesId(labels: Record<string, string> | undefined): string {
  return JSON.stringify(Object.entries(labels ?? {}).sort(([a], [b]) => a.localeCompare(b)));
}

/** A counter's value, or a histogram's observation count, per series of one family. */
export function countsOf(result: Scrape, name: string): Map<string, number> {
  const family = result.families.get(name);
  const counts = new Map<string, number>();
  for (const series of family?.series ?? []) {
    counts.set(seriesId(series.labels), family!.type === 'HISTOGRAM' ? series.count! : series.value!);
  }
  return counts;
}

/** Every series count of `name` after minus before (a series absent before counts from 0). */
export function deltasOf(before: Scrape, after: Scrape, name: string): Map<string, number> {
  const old = countsOf(before, name);
  const deltas = new Map<string, number>();
  for (const [id, value] of countsOf(after, name)) deltas.set(id, value - (old.get(id) ?? 0));
  return deltas;
}

/** Number of samples on the page (every line that is not a comment), histogram buckets included. */
export function sampleCount(text: string): number {
  return text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).length;
}
