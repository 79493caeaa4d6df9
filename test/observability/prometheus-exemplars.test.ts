/**
 * End to end with a real Prometheus (exemplar storage on, so it scrapes
 * OpenMetrics): the scrape succeeds, the pinned counter names survive the
 * OpenMetrics form, and the exemplar Prometheus stores for an acquire is that
 * acquire's server span, as recorded by the OpenTelemetry SDK.
 */
import { tracing } from '@opentelemetry/sdk-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTracing, type Tracing } from '../../exporter/tracing.js';
import { eventually, httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { startPrometheus, type RunningPrometheus } from '../support/prometheus.js';

const spans = new tracing.InMemorySpanExporter();
let sdk: Tracing;
let server: TestServer;
let prometheus: RunningPrometheus;

beforeAll(async () => {
  sdk = startTracing({ spanProcessors: [new tracing.SimpleSpanProcessor(spans)] });
  server = await startServer({ store: 'embedded' });
  prometheus = await startPrometheus({ target: new URL(server.url).host, exemplars: true });
});
afterAll(async () => {
  await prometheus?.stop();
  await server?.stop();
  await sdk?.shutdown();
});

test('Prometheus scrapes OpenMetrics and stores the acquire span as the exemplar', async () => {
  const api = httpClient(server.url);
  const session = (await api.openSession({ owner: 'exemplar' })).body.sessionId as string;
  const grant = (await api.acquire('prom/exemplar', { sessionId: session })).body as { fencingToken: string };
  expect((await api.release('prom/exemplar', { sessionId: session, fencingToken: grant.fencingToken })).status).toBe(200);
  const span = spans.getFinishedSpans().find((s) => s.name === 'lock.acquire' && s.attributes['lock.fencing_token'] === grant.fencingToken)!;
  expect(span).toBeDefined();

  const stored = await eventually(async () => {
    const series = await prometheus.exemplars('lock_acquire_seconds_bucket{outcome="granted"}');
    const all = series.flatMap((s) => s.exemplars);
    return all.find((e) => e.labels.trace_id === span.spanContext().traceId);
  }, 30_000, 500);
  expect(stored.labels).toEqual({ trace_id: span.spanContext().traceId, span_id: span.spanContext().spanId });

  const up = await prometheus.query('up{job="holdfast"}');
  expect(up.map((s) => s.value[1])).toEqual(['1']);
  const released = await eventually(async () => {
    const result = await prometheus.query('lock_release_total{outcome="released"}');
    return result.length > 0 && result[0]!.value[1] === '1' ? result : undefined;
  }, 30_000, 500);
  expect(released[0]!.metric).toMatchObject({ __name__: 'lock_release_total', backend: 'embedded', job: 'holdfast' });
});
