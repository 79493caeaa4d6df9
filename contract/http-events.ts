/**
 * What the HTTP surface reports, as lock/core reports through LockEvents
 * (lock-events.ts): lock/http calls this interface and the observability side
 * (exporter/lock-telemetry.ts) implements it: the L4/L5/L6 server span, metric
 * and exemplar, the admin summary's activity counts, and the `request_failed`
 * log line. lock/http therefore names no metric, span or log format and imports
 * nothing of exporter/; the composition root (server/) plugs the two together.
 */
import type { EventContext, TraceRef } from './lock-events.js';
import type { LockKind } from './metric-table.js';

/** The requests availability SLO S1 counts, each with its own metric (L4, L5, L6). */
export type MeasuredRoute = 'acquire' | 'renew' | 'release';

/** Request headers as node:http hands them over. */
export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** How a measured request was answered. */
export interface HttpAnswer {
  status: number;
  /** The pinned error code of a non-2xx answer. */
  code?: string;
  /** Arrival to answer. */
  seconds: number;
  /** The answer was a draining instance's refusal (outcome `draining` on L4). */
  draining?: boolean;
}

/** One L4/L5/L6 request, from arrival (before validation: malformed ones count too) to answer. */
export interface MeasuredRequest {
  /** The span this request's log events name: its server span, else the caller's. */
  readonly trace: TraceRef;
  /** Runs the handler inside the request's server span, so store calls become its children. */
  run<T>(work: () => Promise<T>): Promise<T>;
  /** The grant's (or the request's) fencing token, for the span. */
  fencingToken(token: string): void;
  /** L4: the kind of grant asked for (the `kind` label; mutex unless told). */
  kind(kind: LockKind): void;
  /** Answered: its metric, span end and activity counts, once (a second call does nothing). */
  answered(answer: HttpAnswer): void;
  /** The caller went away before an answer: nothing is counted (it was not answered). */
  abandoned(): void;
}

export interface HttpTelemetry {
  beginMeasured(route: MeasuredRoute, headers: RequestHeaders): MeasuredRequest;
  /** The caller's span from its trace headers (`traceparent`), for a request that is not measured. */
  callerTrace(headers: RequestHeaders): TraceRef | undefined;
  /** A request answered 500 (a bug), with what the log needs to find it. */
  requestFailed(ctx: EventContext, fact: { method: string; route: string; status: number; message: string }): void;
}
