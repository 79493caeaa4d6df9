/**
 * Retry a non-acquire call (open, release, close, read) through NOT_LEADER
 * answers and unanswered requests, within a small budget. Every other
 * answer, success or failure, is returned to the caller to interpret. Each
 * attempt is abandoned when the budget is spent, so a call never hangs on a
 * silent server.
 */
import type { ApiResult } from './api.js';
import { Backoff } from './backoff.js';
import { startTimer, type Clock } from './clock.js';
import { HoldfastClientError, TransportError } from './errors.js';
import type { RandomSource } from './random.js';
import { returnRequestController, takeRequestController } from './request-signals.js';
import { TRANSIENT_FLOOR_MILLIS } from './runtime.js';

export interface TransientBudget {
  totalMillis: number;
  maxAttempts: number;
}

/** The same 10 s as an acquire's default budget: a loaded server can take seconds to answer. */
export const SHORT_BUDGET: TransientBudget = { totalMillis: 10_000, maxAttempts: 5 };

export async function retryTransient<T>(
  clock: Clock,
  random: RandomSource,
  budget: TransientBudget,
  what: string,
  op: (timeout: AbortSignal) => Promise<ApiResult<T>>,
): Promise<ApiResult<T>> {
  const backoff = new Backoff(TRANSIENT_FLOOR_MILLIS, 1_000, random);
  const deadline = clock.now() + budget.totalMillis;
  for (let attempt = 1; ; attempt += 1) {
    const delay = TRANSIENT_FLOOR_MILLIS + backoff.delay(attempt - 1);
    const timeout = takeRequestController();
    const timer = startTimer(clock, Math.max(TRANSIENT_FLOOR_MILLIS, deadline - clock.now()), () =>
      timeout.abort(new DOMException(`${what} was not answered in time`, 'TimeoutError')),
    );
    // Decided after the answer: a slow answer leaves less budget for another try.
    const canRetry = (): boolean => attempt < budget.maxAttempts && deadline - clock.now() > delay;
    try {
      const answer = await op(timeout.signal);
      timer.cancel(); // before the controller is handed back: its timer must never abort a later request
      returnRequestController(timeout);
      if (answer.ok || answer.code !== 'NOT_LEADER' || !canRetry()) return answer;
    } catch (error) {
      if (error instanceof HoldfastClientError) throw error;
      if (!canRetry()) throw new TransportError(`the lock server did not answer ${what}`, error);
    } finally {
      timer.cancel();
    }
    await clock.sleep(delay);
  }
}
