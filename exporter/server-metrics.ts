/**
 * The server's prom-client metrics, built from the declarative metric table.
 * One Registry per server instance (tests run several in one process).
 */
import { readFileSync } from 'node:fs';
import client, { type Counter, type Gauge, type Histogram, Registry } from 'prom-client';
import type { BackendName } from '../contract/records.js';
import { METRICS, type MetricSpec } from '../contract/metric-table.js';

type ServerMetricKey = {
  [K in keyof typeof METRICS]: (typeof METRICS)[K]['emitter'] extends 'server' ? K : never;
}[keyof typeof METRICS];

type LabelNames<K extends ServerMetricKey> = Exclude<keyof (typeof METRICS)[K]['labels'], 'backend'> & string;
type Values<K extends ServerMetricKey, L extends string> = (typeof METRICS)[K]['labels'] extends Record<L, readonly (infer V)[]>
  ? V
  : never;
/** Label values a caller passes: every label but `backend`, which the instance fixes. */
export type LabelsOf<K extends ServerMetricKey> = { [L in LabelNames<K>]: Values<K, L> };

/** One series of a gauge with labels besides `backend` (a `policy`), as its source reads it. */
export interface GaugeSeries {
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** What a gauge source answers: one figure (the `backend` series), or every series of the family now. */
export type GaugeReading = number | readonly GaugeSeries[];

/** The trace an observation belongs to (OpenMetrics exemplar labels). */
export interface ExemplarLabels {
  trace_id: string;
  span_id: string;
}

export interface ServerMetrics {
  readonly registry: Registry;
  readonly backend: BackendName;
  inc<K extends ServerMetricKey>(key: K, labels: LabelsOf<K>, by?: number): void;
  /** `exemplar` is kept only by histograms the table marks `exemplars: true`. */
  observe<K extends ServerMetricKey>(key: K, labels: LabelsOf<K>, seconds: number, exemplar?: ExemplarLabels): void;
  /**
   * Gauges are read at scrape time from whoever knows best (store or core). A family with a
   * `policy` label is read as its series: the ones the source answers are exactly the ones
   * shown, so a policy removed from the file leaves no stale series behind.
   */
  setGaugeSource(
    key: 'lockHeld' | 'lockWaiters' | 'lockSessionsActive' | 'lockDeadlockCycles' | 'lockOldestHeldSeconds' | 'lockSweepLagSeconds' | 'lockStoreUp',
    read: () => GaugeReading | Promise<GaugeReading>,
  ): void;
}

const MISNAMED_DEFAULT_GAUGES = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

export function createServerMetrics(backend: BackendName, options: { collectDefaults?: boolean } = {}): ServerMetrics {
  const registry = new Registry();
  if (options.collectDefaults !== false) {
    client.collectDefaultMetrics({ register: registry });
    // prom-client names three gauges `_total`, which Prometheus's linter (promtool check metrics)
    // rejects; each is the sum over the `type`-labelled gauge beside it, so nothing is lost.
    for (const name of MISNAMED_DEFAULT_GAUGES) registry.removeSingleMetric(name);
  }
  const gaugeSources = new Map<string, () => GaugeReading | Promise<GaugeReading>>();
  const readOnce = new Set<string>();
  const instruments = new Map<string, Counter<string> | Gauge<string> | Histogram<string>>();
  const withExemplars = new Set<string>();

  for (const [key, spec] of Object.entries(METRICS) as [string, MetricSpec][]) {
    if (spec.emitter !== 'server') continue;
    const labelNames = Object.keys(spec.labels);
    const common = { name: spec.name, help: spec.help, labelNames, registers: [registry] };
    let instrument: Counter<string> | Gauge<string> | Histogram<string>;
    if (spec.type === 'counter') instrument = new client.Counter(common);
    else if (spec.type === 'histogram') {
      const buckets = [...(spec.buckets ?? [])];
      if (spec.exemplars) {
        // prom-client refuses exemplars on a Prometheus-format registry, though they are simply
        // not rendered there; our OpenMetrics writer renders them. Register by hand.
        instrument = new client.Histogram({ ...common, buckets, enableExemplars: true, registers: [] });
        registry.registerMetric(instrument);
      } else {
        instrument = new client.Histogram({ ...common, buckets });
      }
    }
    else {
      // The series a plain figure, or a failure before any reading, is shown on: backend, and the
      // first value of every other label (`policy=""`, keys under no policy).
      const plain = { backend, ...Object.fromEntries(Object.entries(spec.labels).filter(([name]) => name !== 'backend').map(([name, values]) => [name, values[0] ?? ''])) };
      instrument = new client.Gauge({
        ...common,
        async collect() {
          const read = gaugeSources.get(key);
          if (!read) return;
          // A scrape must not fail because a source did: keep the last figure, or NaN
          // (a gap on the dashboard) if there never was one.
          try {
            const reading = await read();
            if (typeof reading === 'number') this.set(plain, reading);
            else {
              this.reset();
              for (const series of reading) this.set({ ...series.labels, backend }, series.value);
            }
            readOnce.add(key);
          } catch {
            if (!readOnce.has(key)) this.set(plain, Number.NaN);
          }
        },
      });
    }
    if (spec.exemplars) withExemplars.add(key);
    if (spec.buildLabels) (instrument as Gauge<string>).set(BUILD_LABELS, 1);
    else initialiseSeries(instrument, spec, backend);
    instruments.set(key, instrument);
  }

  return {
    registry,
    backend,
    inc(key, labels, by = 1) {
      (instruments.get(key) as Counter<string>).inc({ ...labels, backend } as Record<string, string>, by);
    },
    observe(key, labels, seconds, exemplar) {
      const histogram = instruments.get(key) as Histogram<string>;
      const all = { ...labels, backend } as Record<string, string>;
      // prom-client swaps observe's signature when exemplars are on.
      if (withExemplars.has(key)) histogram.observe({ labels: all, value: seconds, ...(exemplar ? { exemplarLabels: { ...exemplar } } : {}) });
      else histogram.observe(all, seconds);
    },
    setGaugeSource(key, read) {
      gaugeSources.set(key, read);
    },
  };
}

/** Holdfast's version from the package manifest next to the sources (or the build output's parent). */
function holdfastVersion(): string {
  for (const path of ['../package.json', '../../package.json']) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'holdfast' && manifest.version) return manifest.version;
    } catch {
      // Not there in this layout: try the next one.
    }
  }
  return 'unknown';
}

/** `holdfast_build_info`'s one series: fixed for the life of the process. */
const BUILD_LABELS = { version: holdfastVersion(), node_version: process.version };

/** Every series with known label values exists from the first scrape, so ratios and alerts have data. */
function initialiseSeries(instrument: Counter<string> | Gauge<string> | Histogram<string>, spec: MetricSpec, backend: BackendName) {
  const dims = Object.entries(spec.labels).filter(([name]) => name !== 'backend');
  let combos: Record<string, string>[] = [{ backend }];
  for (const [name, values] of dims) combos = combos.flatMap((c) => values.map((v) => ({ ...c, [name]: v })));
  for (const labels of combos) {
    if (instrument instanceof client.Histogram) instrument.zero(labels);
    else if (instrument instanceof client.Counter) instrument.inc(labels, 0);
    else instrument.set(labels, 0);
  }
}
