import { SpanStatusCode } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Registry, register as globalRegistry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { METRICS } from '../../contract/metric-table.js';
import { LockClient } from '../../client/client.js';
import { error } from './support/fake-lock-server.js';
import { FakeTransport } from './support/fake-transport.js';
import { fakeWorld } from './support/fake-world.js';

function tracing(): { provider: BasicTracerProvider; exporter: InMemorySpanExporter } {
  const exporter = new InMemorySpanExporter();
  return { exporter, provider: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }) };
}

describe('SDK span lock.acquire', () => {
  it('one span per acquire covering the retry loop, with lock.attempts', async () => {
    const world = fakeWorld();
    const { provider, exporter } = tracing();
    world.server.intercept = (c) =>
      c.route === 'L4' && world.server.count('L4') <= 2 ? error(409, 'LOCK_CONTENDED', 'x', true) : undefined;
    const session = await world.run(world.client({ tracerProvider: provider }).openSession());
    const handle = await world.run(session.acquire('k'));
    const spans = exporter.getFinishedSpans().filter((s) => s.name === 'lock.acquire');
    expect(spans).toHaveLength(1);
    expect(spans[0]!.attributes['lock.attempts']).toBe(3);
    expect(spans[0]!.attributes['lock.outcome']).toBe('granted');
    expect(spans[0]!.attributes['lock.fencing_token']).toBe(handle!.fencingToken);
  });

  it('marks a failed acquire as an error span', async () => {
    const world = fakeWorld();
    const { provider, exporter } = tracing();
    world.server.intercept = (c) => (c.route === 'L4' ? error(400, 'VALIDATION_FAILED', 'bad') : undefined);
    const session = await world.run(world.client({ tracerProvider: provider }).openSession());
    await world.run(session.acquire('k')).catch(() => {});
    const [span] = exporter.getFinishedSpans();
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
    expect(span!.attributes['lock.attempts']).toBe(1);
    expect(span!.attributes['lock.outcome']).toBe('error');
  });
});

describe('SDK meters', () => {
  it('lock_client_acquire_attempts observes attempts per call by outcome — never as a label', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession());
    await world.run(session.acquire('free'));
    world.server.intercept = (c) => (c.route === 'L4' ? error(409, 'LOCK_CONTENDED', 'x', true) : undefined);
    await world.run(session.acquire('busy', { policy: { maxAttempts: 4 } }));
    const metric = await world.registry.getSingleMetric(METRICS.lockClientAcquireAttempts.name)!.get();
    const series = (suffix: string, outcome: string) =>
      metric.values.find(
        (v) => (v as { metricName?: string }).metricName?.endsWith(suffix) && v.labels.outcome === outcome,
      )?.value;
    const count = (outcome: string) => series('_count', outcome);
    const sum = (outcome: string) => series('_sum', outcome);
    expect(count('granted')).toBe(1);
    expect(sum('granted')).toBe(1);
    expect(count('not_granted')).toBe(1);
    expect(sum('not_granted')).toBe(4);
    for (const v of metric.values) {
      expect(Object.keys(v.labels).filter((l) => l !== 'le')).toEqual(['outcome']);
    }
  });

  it('registers on the registry passed in, never the global one; two clients share it', async () => {
    const world = fakeWorld();
    const registry = new Registry();
    const make = () => new LockClient({ transport: new FakeTransport(world.server, world.clock), clock: world.clock, registry });
    make();
    make();
    expect(registry.getSingleMetric('lock_session_lost_total')).toBeDefined();
    expect(registry.getSingleMetric('lock_client_acquire_attempts')).toBeDefined();
    expect(globalRegistry.getSingleMetric('lock_session_lost_total')).toBeUndefined();
    // Without a registry the SDK records nothing anywhere.
    new LockClient({ transport: new FakeTransport(world.server, world.clock), clock: world.clock });
    expect(globalRegistry.getSingleMetric('lock_client_acquire_attempts')).toBeUndefined();
  });
});
