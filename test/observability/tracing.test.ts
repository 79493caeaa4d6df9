/**
 * Traces (C4): the server span `lock.acquire` with its pinned attributes, store
 * calls as its children, the caller's trace continued, the span's ids in the
 * request's log lines and as OpenMetrics exemplars on lock_acquire_seconds.
 * The OpenTelemetry SDK runs for real in this test process, exporting to memory.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import { tracing } from '@opentelemetry/sdk-node';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTracing, type Tracing } from '../../exporter/tracing.js';
import { httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { parseExposition } from './support/scrape.js';

const exporter = new tracing.InMemorySpanExporter();
let sdk: Tracing;
let server: TestServer;
let api: ReturnType<typeof httpClient>;

beforeAll(async () => {
  sdk = startTracing({ spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] });
  server = await startServer({ store: 'embedded' });
  api = httpClient(server.url);
});
afterAll(async () => {
  await server?.stop();
  await sdk?.shutdown();
});

const spans = () => exporter.getFinishedSpans();
const parentOf = (span: tracing.ReadableSpan) => span.parentSpanContext?.spanId;
const serverSpanFor = (requestId: string, name = 'lock.acquire') => {
  const line = server.logs.find((l) => l.requestId === requestId);
  return spans().find((s) => s.name === name && s.spanContext().spanId === line?.spanId);
};

describe('server span lock.acquire', () => {
  test('granted: pinned attributes, store calls as children, and its ids in the lock_granted line', async () => {
    const session = (await api.openSession({ owner: 'tracer' })).body.sessionId as string;
    const answer = await api.acquire('trace/granted', { sessionId: session });
    expect(answer.status).toBe(200);
    const requestId = answer.headers.get('x-request-id')!;

    const line = server.logs.find((l) => l.event === 'lock_granted' && l.key === 'trace/granted')!;
    expect(line.requestId).toBe(requestId);
    const span = spans().find((s) => s.name === 'lock.acquire' && s.spanContext().traceId === line.traceId)!;
    expect(span).toBeDefined();
    expect(line.spanId).toBe(span.spanContext().spanId);
    expect(span.attributes).toMatchObject({
      'lock.backend': 'embedded',
      'lock.outcome': 'granted',
      'lock.fencing_token': answer.body.fencingToken,
    });
    expect(span.attributes['error.type']).toBeUndefined();
    expect(span.status.code).not.toBe(SpanStatusCode.ERROR);
    // The store's try_acquire ran inside the request's span.
    const children = spans().filter((s) => parentOf(s) === span.spanContext().spanId);
    expect(children.map((s) => s.name)).toContain('store.try_acquire');
    expect(children.every((s) => s.spanContext().traceId === span.spanContext().traceId)).toBe(true);
  });

  test("contended: status Error, error.type = the metric's outcome, ids in the lock_contended line", async () => {
    const holder = (await api.openSession({ owner: 'holder' })).body.sessionId as string;
    const other = (await api.openSession({ owner: 'other' })).body.sessionId as string;
    expect((await api.acquire('trace/contended', { sessionId: holder })).status).toBe(200);
    const answer = await api.acquire('trace/contended', { sessionId: other });
    expect(answer.status).toBe(409);

    const line = server.logs.find((l) => l.event === 'lock_contended' && l.key === 'trace/contended')!;
    const span = serverSpanFor(answer.headers.get('x-request-id')!)!;
    expect(span).toBeDefined();
    expect(line.traceId).toBe(span.spanContext().traceId);
    expect(span.attributes).toMatchObject({ 'lock.backend': 'embedded', 'lock.outcome': 'contended', 'error.type': 'contended' });
    expect(span.attributes['lock.fencing_token']).toBeUndefined();
    expect(span.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'contended' });
  });

  test('a malformed L4 that never reaches core still has its span, with error.type invalid', async () => {
    const answer = await api.acquire('trace/invalid', { sessionId: 42 });
    expect(answer.status).toBe(400);
    // No log line names a malformed request's span; it is this file's only invalid acquire.
    const invalid = spans().filter((s) => s.name === 'lock.acquire' && s.attributes['lock.outcome'] === 'invalid');
    expect(invalid).toHaveLength(1);
    expect(invalid[0]!.attributes['error.type']).toBe('invalid');
    expect(invalid[0]!.status.code).toBe(SpanStatusCode.ERROR);
  });

  test("the caller's traceparent is continued: same trace, the caller's span as parent, ids in the log", async () => {
    const session = (await api.openSession({ owner: 'sdk' })).body.sessionId as string;
    const traceId = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
    const callerSpanId = '1122334455667788';
    const answer = await api.call('POST', `/v1/locks/${encodeURIComponent('trace/child')}/acquire`, { sessionId: session }, {
      traceparent: `00-${traceId}-${callerSpanId}-01`,
      authorization: `Bearer ${api.sessionToken(session)}`,
    });
    expect(answer.status).toBe(200);
    const span = spans().find((s) => s.name === 'lock.acquire' && s.spanContext().traceId === traceId)!;
    expect(span).toBeDefined();
    expect(parentOf(span)).toBe(callerSpanId);
    const line = server.logs.find((l) => l.event === 'lock_granted' && l.key === 'trace/child')!;
    expect({ traceId: line.traceId, spanId: line.spanId }).toEqual({ traceId, spanId: span.spanContext().spanId });
  });

  test('L5 and L6 have server spans too, and lock_released / lock_lost name them', async () => {
    const session = (await api.openSession({ owner: 'renewer' })).body.sessionId as string;
    const grant = (await api.acquire('trace/l56', { sessionId: session })).body as { fencingToken: string };
    const lost = await api.renew('trace/l56', { sessionId: session, fencingToken: '999999999' });
    expect(lost.status).toBe(409);
    const released = await api.release('trace/l56', { sessionId: session, fencingToken: grant.fencingToken });
    expect(released.status).toBe(200);

    const renewSpan = serverSpanFor(lost.headers.get('x-request-id')!, 'lock.renew')!;
    expect(renewSpan.attributes).toMatchObject({ 'lock.outcome': 'lost', 'error.type': 'lost', 'lock.fencing_token': '999999999' });
    const releaseSpan = serverSpanFor(released.headers.get('x-request-id')!, 'lock.release')!;
    expect(releaseSpan.attributes).toMatchObject({ 'lock.outcome': 'released', 'lock.fencing_token': grant.fencingToken });
    expect(releaseSpan.status.code).not.toBe(SpanStatusCode.ERROR);
  });
});

describe('exemplars', () => {
  test('OpenMetrics scrape: lock_acquire_seconds buckets carry trace_id / span_id of the latest L4', async () => {
    const session = (await api.openSession({ owner: 'exemplar' })).body.sessionId as string;
    const answer = await api.acquire('trace/exemplar', { sessionId: session });
    expect(answer.status).toBe(200);
    const line = server.logs.find((l) => l.event === 'lock_granted' && l.key === 'trace/exemplar')!;

    const response = await fetch(`${server.url}/metrics`, {
      // What Prometheus sends with exemplar storage on.
      headers: { accept: 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1' },
    });
    expect(response.headers.get('content-type')).toMatch(/^application\/openmetrics-text; version=1\.0\.0/);
    const body = await response.text();
    expect(body.endsWith('# EOF\n')).toBe(true);
    const exemplars = body
      .split('\n')
      .filter((l) => l.startsWith('lock_acquire_seconds_bucket{') && l.includes('outcome="granted"') && l.includes(' # {'));
    expect(exemplars.length).toBeGreaterThan(0);
    const pattern = /^lock_acquire_seconds_bucket\{[^}]*\} \d+ # \{trace_id="([0-9a-f]{32})",span_id="([0-9a-f]{16})"\} ([0-9.e-]+) (\d+(?:\.\d+)?)$/;
    const parsed = exemplars.map((l) => pattern.exec(l));
    expect(parsed.every(Boolean)).toBe(true);
    expect(parsed.map((m) => m![1])).toContain(line.traceId);
    expect(parsed.map((m) => m![2])).toContain(line.spanId);
    // OpenMetrics counter naming: the family without _total, the samples with it.
    expect(body).toContain('# TYPE lock_release counter\n');
    expect(body).toMatch(/^lock_release_total\{backend="embedded",outcome="released"\} \d+$/m);
  });

  test('the classic text format carries no exemplars, and still the pinned counter names after an OpenMetrics scrape', async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).not.toContain(' # {');
    expect(text).not.toContain('# EOF');
    const families = parseExposition(text);
    expect(families.get('lock_release_total')?.type).toBe('COUNTER');
    expect(families.has('lock_release')).toBe(false);
  });
});
