/**
 * The caller's trace context from request headers. The registered propagator
 * (OTEL_PROPAGATORS, W3C by default) is asked first; when tracing is off there
 * is none, so `traceparent` is read directly: the server's logs and exemplars
 * then still name the caller's trace (the SDK's `lock.acquire` span).
 */
import {
  ProxyTracerProvider,
  ROOT_CONTEXT,
  isSpanContextValid,
  propagation,
  trace,
  type Context,
  type SpanContext,
} from '@opentelemetry/api';

/** The no-op provider the API answers with while no SDK is registered. */
const NO_TRACING = new ProxyTracerProvider().getDelegate();

/**
 * Whether a tracer provider is registered (exporter/tracing.ts, or a test's). When none is,
 * spans are no-ops and the hot path skips creating them and switching contexts.
 */
export function tracingActive(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider && provider.getDelegate() === NO_TRACING);
}

export type Headers = Record<string, string | string[] | undefined>;

export function extractCallerContext(headers: Headers): Context {
  const viaPropagator = propagation.extract(ROOT_CONTEXT, headers);
  const found = trace.getSpanContext(viaPropagator);
  if (found && isSpanContextValid(found)) return viaPropagator;
  const parsed = parseTraceparent(headers.traceparent);
  return parsed ? trace.setSpanContext(ROOT_CONTEXT, parsed) : viaPropagator;
}

/** The caller's span, if its headers name a valid one. */
export function callerSpanContext(headers: Headers): SpanContext | undefined {
  return trace.getSpanContext(extractCallerContext(headers));
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** W3C Trace Context level 1: version 00 has exactly four fields; later versions may append more. */
export function parseTraceparent(header: string | string[] | undefined): SpanContext | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const match = value ? TRACEPARENT.exec(value.trim()) : null;
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  const context: SpanContext = { traceId, spanId, traceFlags: parseInt(flags, 16) & 1, isRemote: true };
  return isSpanContextValid(context) ? context : undefined;
}
