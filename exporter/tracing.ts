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

export interface TracingDecision {
  enabled: boolean;
  /** Why, in words for the start-up line. */
  reason: string;
}

type Env = Record<string, string | undefined>;

/**
 * On when OTEL_TRACES_EXPORTER names an exporter other than `none`, or when
 * an OTLP endpoint is set (the default exporter is then OTLP, http/protobuf
 * unless OTEL_EXPORTER_OTLP_PROTOCOL says otherwise). OTEL_SDK_DISABLED=true wins.
 */
export function tracingWanted(env: Env = process.env): TracingDecision {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return { enabled: false, reason: 'OTEL_SDK_DISABLED=true' };
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '' && name !== 'null');
  if (exporters.length > 0) {
    if (exporters.every((name) => name === 'none')) return { enabled: false, reason: 'OTEL_TRACES_EXPORTER=none' };
    return { enabled: true, reason: `OTEL_TRACES_EXPORTER=${exporters.join(',')}` };
  }
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (endpoint) return { enabled: true, reason: `OTLP to ${endpoint}` };
  return { enabled: false, reason: 'no OTEL_TRACES_EXPORTER or OTEL_EXPORTER_OTLP_ENDPOINT set' };
}

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
