/**
 * Telemetry of one L4 / L5 / L6 request, from arrival to answer: the server
 * span (`lock.acquire`, `lock.renew`, `lock.release`), the pinned metric with
 * its OpenMetrics exemplar, and the span context every log line of the request
 * carries. The outcome is decided once (exporter/outcomes.ts) for all three.
 * HTTP-framework free: the HTTP layer passes headers in and the answer out,
 * through contract/http-events.ts (wired by exporter/lock-telemetry.ts).
 */
import {
  INVALID_SPAN_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  context,
  isSpanContextValid,
  trace,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import type { HttpAnswer, MeasuredRequest, MeasuredRoute, RequestHeaders } from '../contract/http-events.js';
import { outcomeOf, SUCCESS_OUTCOME, type MeasuredOutcome } from './outcomes.js';
import type { AcquireOutcome, LockKind, ReleaseOutcome, RenewOutcome } from '../contract/metric-table.js';
import type { ExemplarLabels, ServerMetrics } from './server-metrics.js';
import { extractCallerContext, tracingActive } from './trace-context.js';

export const SERVER_TRACER = 'holdfast-server';

/** Span attribute value of `lock.outcome` / `error.type` when the caller left before an answer. */
export const ABORTED = 'aborted';

/** Told each answered request's outcome, once (the admin summary's activity counts). */
export type OutcomeListener = (route: MeasuredRoute, outcome: MeasuredOutcome) => void;

/** Implements contract/http-events.ts's MeasuredRequest (lock/http calls it through HttpTelemetry). */
export function beginMeasuredRequest(
  route: MeasuredRoute,
  headers: RequestHeaders,
  metrics: ServerMetrics,
  onOutcome: OutcomeListener = () => {},
): MeasuredRequest {
  const parent = extractCallerContext(headers);
  if (!tracingActive()) return untracedRequest(route, trace.getSpanContext(parent) ?? INVALID_SPAN_CONTEXT, metrics, onOutcome);
  const span = trace
    .getTracer(SERVER_TRACER)
    .startSpan(`lock.${route}`, { kind: SpanKind.SERVER, attributes: { 'lock.backend': metrics.backend } }, parent);
  const spanContext = span.spanContext();
  const spanned = trace.setSpan(parent, span);
  let finished = false;
  let kind: LockKind = 'mutex';

  return {
    trace: spanContext,
    run: (work) => context.with(spanned, work),
    fencingToken(token) {
      span.setAttribute('lock.fencing_token', token);
    },
    kind(asked) {
      kind = asked;
      span.setAttribute('lock.kind', asked);
    },
    answered({ status, code, seconds, draining }: HttpAnswer) {
      if (finished) return;
      finished = true;
      const outcome = outcomeOf(route, status, code, draining);
      record(metrics, route, outcome, kind, seconds, exemplarOf(spanContext));
      endSpan(span, outcome, outcome !== SUCCESS_OUTCOME[route]);
      onOutcome(route, outcome);
    },
    abandoned() {
      if (finished) return;
      finished = true;
      endSpan(span, ABORTED, true);
    },
  };
}

/**
 * Tracing off: no span and no context switch, only the metric. The log lines and the
 * exemplar still name the caller's span (what a no-op span would have carried).
 */
function untracedRequest(route: MeasuredRoute, spanContext: SpanContext, metrics: ServerMetrics, onOutcome: OutcomeListener): MeasuredRequest {
  let finished = false;
  let kind: LockKind = 'mutex';
  return {
    trace: spanContext,
    run: (work) => work(),
    fencingToken() {},
    kind(asked) {
      kind = asked;
    },
    answered({ status, code, seconds, draining }: HttpAnswer) {
      if (finished) return;
      finished = true;
      const outcome = outcomeOf(route, status, code, draining);
      record(metrics, route, outcome, kind, seconds, exemplarOf(spanContext));
      onOutcome(route, outcome);
    },
    abandoned() {
      finished = true;
    },
  };
}

function record(metrics: ServerMetrics, route: MeasuredRoute, outcome: MeasuredOutcome, kind: LockKind, seconds: number, exemplar?: ExemplarLabels) {
  if (route === 'acquire') metrics.observe('lockAcquireSeconds', { outcome: outcome as AcquireOutcome, kind }, seconds, exemplar);
  else if (route === 'renew') metrics.inc('lockRenewTotal', { outcome: outcome as RenewOutcome });
  else metrics.inc('lockReleaseTotal', { outcome: outcome as ReleaseOutcome });
}

/** A failed span has status Error and `error.type` equal to the metric's outcome value. */
function endSpan(span: Span, outcome: string, failed: boolean) {
  span.setAttribute('lock.outcome', outcome);
  if (failed) {
    span.setAttribute('error.type', outcome);
    span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
  }
  span.end();
}

/** Only traces someone recorded are worth linking from a histogram bucket. */
function exemplarOf(context: SpanContext): ExemplarLabels | undefined {
  if (!isSpanContextValid(context) || (context.traceFlags & TraceFlags.SAMPLED) === 0) return undefined;
  return { trace_id: context.traceId, span_id: context.spanId };
}
