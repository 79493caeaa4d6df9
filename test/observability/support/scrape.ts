/**
 * Scrapes a server's /metrics and parses it with a Prometheus text-format
 * parser, so tests read what a Prometheus server would, not prom-client's objects.
 */
import parsePrometheusTextFormat, { type ParsedFamily } from 'parse-prometheus-text-format';

export interface Scrape {
  text: string;
  contentType: string;
  families: Map<string, ParsedFamily>;
}

export async function scrape(baseUrl: string): Promise<Scrape> {
  const response = await fetch(`${baseUrl}/metrics`);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  const text = await response.text();
  const families = new Map(parsePrometheusTextFormat(text).map((family) => [family.name, family]));
  return { text, contentType: response.headers.get('content-type') ?? '', families };
}

/** A series identity independent of label order. */
export function seriesId(labels: Record<string, string> | undefined): string {
  return JSON.stringify(Object.entries(labels ?? {}).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * A counter's value, or a histogram's observation count, per series of one family.
 * Missing family → empty map (the caller's existence checks report it).
 */
export function countsOf(result: Scrape, name: string): Map<string, number> {
  const family = result.families.get(name);
  const counts = new Map<string, number>();
  for (const sample of family?.metrics ?? []) {
    const raw = family!.type === 'HISTOGRAM' ? sample.count : sample.value;
    counts.set(seriesId(sample.labels), Number(raw));
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

/** Total number of series (samples) on the page, histogram buckets included. */
export function seriesCount(text: string): number {
  return text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).length;
}
