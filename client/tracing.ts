/**
 * The SDK span `lock.acquire` (C4): one span per acquire call covering the
 * whole retry loop, carrying `lock.attempts`. Only `@opentelemetry/api` is
 * used — the application brings (or omits) its SDK; without one every call
 * here is a no-op.
 */
import { SpanKind, SpanStatusCode, trace, type Span, type TracerProvider } from '@opentelemetry/api';

export const TRACER_NAME = 'holdfast-client';

export class AcquireTracer {
  constructor(private readonly provider: TracerProvider | undefined) {}

  /** Run `fn` inside an active `lock.acquire` span; `fn` sets the outcome attributes. */
  async inSpan<T>(key: string, fn: (span: Span) => Promise<T>): Promise<T> {
    // Resolved per call so an app that registers its provider after creating the client still gets spans.
    const tracer = (this.provider ?? trace.getTracerProvider()).getTracer(TRACER_NAME);
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
