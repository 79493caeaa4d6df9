/**
 * Several Holdfast instances behind one Transport (`baseUrl: [a, b, …]`).
 *
 * Sessions live in the shared store, so a session id and its token work on any
 * instance: moving between endpoints keeps the session. Requests go to the
 * current endpoint; the current endpoint moves on when it fails to answer
 * (refused, reset, unanswered in time) or answers 503 (store unreachable,
 * draining). A request that failed or got a 503 is sent once more at once to
 * each other endpoint — unless the caller's own signal ended it (its time is
 * spent: the caller's retry loop decides, within its budget, and its next try
 * already goes to the next endpoint). Every other answer is final here. When one endpoint did not
 * answer and the rest answered 503, the request's outcome is unknown: it throws (EndpointsUnansweredError).
 */
import type { Transport, TransportRequest, TransportResponse } from './transport.js';

/**
 * No endpoint gave a final answer, and one did not answer at all: that one may have acted on the
 * request (granted an acquire whose answer was lost), so the outcome is unknown, whatever the 503s of
 * the others said. Thrown like any transport failure; `lastAnswer` keeps what the servers said.
 */
export class EndpointsUnansweredError extends Error {
  constructor(
    readonly failure: unknown,
    readonly lastAnswer: TransportResponse,
  ) {
    super(`no endpoint gave a final answer: one did not answer (${String((failure as Error)?.message ?? failure)}), the others answered ${lastAnswer.status}`, {
      cause: failure,
    });
    this.name = 'EndpointsUnansweredError';
  }
}

export class EndpointsTransport implements Transport {
  #current = 0;
  /** How many times the current endpoint moved (tests, logs). */
  moves = 0;

  constructor(private readonly endpoints: readonly Transport[]) {
    if (endpoints.length === 0) throw new RangeError('EndpointsTransport needs at least one endpoint');
  }

  /** Index of the endpoint the next request goes to. */
  get current(): number {
    return this.#current;
  }

  async send(request: TransportRequest): Promise<TransportResponse> {
    /** The last endpoint that failed to answer: it may have acted on the request. */
    let unanswered: { error: unknown } | undefined;
    let lastAnswer: TransportResponse | undefined;
    for (let tried = 0; tried < this.endpoints.length; tried += 1) {
      const index = this.#current;
      try {
        const answer = await this.endpoints[index]!.send(request);
        if (answer.status !== 503) return answer;
        lastAnswer = answer;
      } catch (error) {
        unanswered = { error };
        this.moveOn(index);
        // A request its caller abandoned (timeout, cancel) is the caller's to retry.
        if (request.signal?.aborted) throw error;
        continue;
      }
      this.moveOn(index);
      if (request.signal?.aborted) break;
    }
    if (unanswered === undefined) return lastAnswer!;
    if (lastAnswer === undefined) throw unanswered.error;
    // The 503s do not settle it: an acquire the silent endpoint granted must be measured from this send.
    throw new EndpointsUnansweredError(unanswered.error, lastAnswer);
  }

  /** Concurrent failures of one endpoint move the current endpoint once, not once each. */
  private moveOn(failed: number): void {
    if (this.#current !== failed) return;
    this.#current = (failed + 1) % this.endpoints.length;
    this.moves += 1;
  }
}
