/**
 * Whether the server traces, from the standard `OTEL_*` environment (C4). Its own module so a
 * server with tracing off decides without loading the OpenTelemetry SDK (about 27 MB resident):
 * `holdfast server` imports exporter/tracing.ts only when this says on.
 */
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
