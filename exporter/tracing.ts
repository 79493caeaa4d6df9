/**
 * OpenTelemetry tracing for the server, configured by the standard `OTEL_*`
 * environment variables and off unless they name an exporter (C4).
 *
 * NodeSDK reads the exporter, protocol, endpoint, headers, sampler and
 * propagators from the environment itself; this module only decides whether
 * to start it and keeps it to traces: no auto-instrumentation, no OTel metrics
 * or logs (Holdfast's metrics are prom-client's, its logs pino's), and no
 * resource auto-detection (its async host id makes spans export late).
 */
import { NodeSDK, type tracing } from '@opentelemetry/sdk-node';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';

export { tracingWanted, type TracingDecision } from './tracing-wanted.js';

export interface Tracing {
  /** Flushes pending spans and unregisters nothing (the process is ending). */
  shutdown(): Promise<void>;
}

export interface StartTracingOptions {
  /** Replace the exporters the environment names (tests pass an in-memory exporter). */
  spanProcessors?: tracing.SpanProcessor[];
  serviceName?: string;
}

export function startTracing(options: StartTracingOptions = {}): Tracing {
  // OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES still apply: the env detector is synchronous.
  const resource = resourceFromAttributes({ 'service.name': options.serviceName ?? 'holdfast' }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  const sdk = new NodeSDK({
    resource,
    autoDetectResources: false,
    instrumentations: [],
    metricReaders: [],
    logRecordProcessors: [],
    ...(options.spanProcessors ? { spanProcessors: options.spanProcessors } : {}),
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
