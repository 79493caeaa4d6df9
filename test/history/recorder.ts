/**
 * The history recorder: one monotonic clock for the whole test process
 * (performance.now() from the recorder's origin), an index per operation in
 * invoke order, and the completion of each. An operation still open when the
 * history is taken is closed as `unknown` at that instant: its effect, if any,
 * may come at any time after its invoke.
 */
import { HISTORY_FORMAT, type History, type HistoryHeader, type HistoryOp, type Outcome } from './format.js';

export type Invocation = Pick<HistoryOp, 'process' | 'f' | 'args'> & Partial<Pick<HistoryOp, 'sessionId' | 'key' | 'endpoint'>>;

export interface Completion {
  outcome: Outcome;
  result?: HistoryOp['result'];
  error?: HistoryOp['error'];
  /** L1 learns its session only from the answer. */
  sessionId?: string;
}

export class HistoryRecorder {
  readonly #origin = performance.now();
  readonly #ops: HistoryOp[] = [];
  readonly #open = new Set<HistoryOp>();

  now(): number {
    return performance.now() - this.#origin;
  }

  /** Records the invoke now; call the returned function once with the outcome. */
  invoke(invocation: Invocation): (completion: Completion) => HistoryOp {
    const op: HistoryOp = {
      index: this.#ops.length,
      process: invocation.process,
      f: invocation.f,
      ...(invocation.sessionId !== undefined ? { sessionId: invocation.sessionId } : {}),
      ...(invocation.key !== undefined ? { key: invocation.key } : {}),
      args: invocation.args,
      invokeAt: this.now(),
      completeAt: Number.NaN,
      outcome: 'unknown',
      ...(invocation.endpoint !== undefined ? { endpoint: invocation.endpoint } : {}),
    };
    this.#ops.push(op);
    this.#open.add(op);
    let done = false;
    return (completion) => {
      if (done) return op; // a late second answer changes nothing
      done = true;
      this.#open.delete(op);
      op.completeAt = this.now();
      op.outcome = completion.outcome;
      if (completion.result) op.result = completion.result;
      if (completion.error) op.error = completion.error;
      if (completion.sessionId !== undefined) op.sessionId = completion.sessionId;
      return op;
    };
  }

  /** Runs `fn` as one operation; its value decides the completion, a throw is `unknown` unless `classify` says otherwise. */
  async record<T>(invocation: Invocation, fn: () => Promise<T>, complete: (value: T) => Completion, onError: (error: unknown) => Completion = unknownFrom): Promise<T> {
    const finish = this.invoke(invocation);
    try {
      const value = await fn();
      finish(complete(value));
      return value;
    } catch (error) {
      finish(onError(error));
      throw error;
    }
  }

  get size(): number {
    return this.#ops.length;
  }

  /** The history so far; operations still open are closed as unknown now (they stay open for a later answer). */
  history(header: Omit<HistoryHeader, 'format' | 'clock'>): History {
    const now = this.now();
    const ops = this.#ops.map((op) => (this.#open.has(op) ? { ...op, completeAt: now, outcome: 'unknown' as const, error: { message: 'no answer before the history was taken' } } : { ...op }));
    return { header: { format: HISTORY_FORMAT, clock: 'ms since origin, performance.now() of the test process', ...header }, ops };
  }
}

export function unknownFrom(error: unknown): Completion {
  return { outcome: 'unknown', error: { message: error instanceof Error ? `${error.name}: ${error.message}`.slice(0, 200) : String(error) } };
}
