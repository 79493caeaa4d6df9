/**
 * The public option types for the optional peers, stated structurally so the
 * SDK's declarations type-check in an application that installed neither
 * prom-client nor @opentelemetry/api. A prom-client `Registry` and an
 * OpenTelemetry `TracerProvider` are assignable to them.
 */

/** What the SDK needs of a prom-client `Registry` (it registers its two meters there). */
export interface MetricsRegistry {
  getSingleMetric(name: string): unknown;
  registerMetric(metric: never): void;
}

/** What the SDK needs of an OpenTelemetry `TracerProvider`. */
export interface TracerProviderLike {
  getTracer(name: string): unknown;
}
