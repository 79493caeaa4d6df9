/**
 * The SDK span `lock.acquire` (C4): one span per acquire call covering the
 * whole retry loop, carrying `lock.attempts`. Only `@opentelemetry/api` is
 * used — the application brings (or omits) its SDK; without one every call
 * here is a no-op. The API itself is an optional peer: without it, no spans.
 */
import type { Tracer, TracerProvider } from '@opentelemetry/api';
import { otelApi } from './otel.js';
import type { TracerProviderLike } from './peer-types.js';

export const TRACER_NAME = 'holdfast-client';

/** The attributes the acquire loop sets; a span that records nothing stands in without the API. */
export interface AcquireSpan {
  setAttribute(key: string, value: string | number | boolean): unknown;
}

const NO_SPAN: AcquireSpan = { setAttribute: () => NO_SPAN };

export class AcquireTracer {
  /** The tracer of the provider last resolved: one getTracer per provider, not per acquire. */
  #tracerOf: { provider: TracerProvider; tracer: Tracer } | undefined;

  constructor(private readonly provider: TracerProviderLike | undefined) {}

  /** Run `fn` inside an active `lock.acquire` span; `fn` sets the outcome attributes. */
  async inSpan<T>(key: string, fn: (span: AcquireSpan) => Promise<T>): Promise<T> {
    const api = otelApi;
    if (api === undefined) return fn(NO_SPAN);
    const { SpanKind, SpanStatusCode, trace } = api;
    // Resolved per call so an app that registers its provider after creating the client still gets spans
    // (the global proxy's tracer follows a provider registered later; `trace.disable()` makes a new proxy).
    const provider = (this.provider as TracerProvider | undefined) ?? trace.getTracerProvider();
    if (this.#tracerOf?.provider !== provider) this.#tracerOf = { provider, tracer: provider.getTracer(TRACER_NAME) };
    const tracer = this.#tracerOf.tracer;
    return tracer.startActiveSpan(
      'lock.acquire',
      { kind: SpanKind.CLIENT, attributes: { 'lock.key': key } },
      async (span) => {
        try {
          return await fn(span);
        } catch (error) {
          span.recordException(error instanceof Error ? error : String(error));
          span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
          throw error;
        } finally {
          span.end();
        }
      },
    );
  }
}
