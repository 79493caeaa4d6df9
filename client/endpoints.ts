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
 * already goes to the next endpoint). Every other answer is final here.
 */
import type { Transport, TransportRequest, TransportResponse } from './transport.js';

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
    let lastError: unknown;
    let lastAnswer: TransportResponse | undefined;
    for (let tried = 0; tried < this.endpoints.length; tried += 1) {
      const index = this.#current;
      try {
        const answer = await this.endpoints[index]!.send(request);
        if (answer.status !== 503) return answer;
        lastAnswer = answer;
        lastError = undefined;
      } catch (error) {
        lastError = error;
        lastAnswer = undefined;
        this.moveOn(index);
        // A request its caller abandoned (timeout, cancel) is the caller's to retry.
        if (request.signal?.aborted) throw error;
        continue;
      }
      this.moveOn(index);
      if (request.signal?.aborted) break;
    }
    if (lastAnswer !== undefined) return lastAnswer;
    throw lastError;
  }

  /** Concurrent failures of one endpoint move the current endpoint once, not once each. */
  private moveOn(failed: number): void {
    if (this.#current !== failed) return;
    this.#current = (failed + 1) % this.endpoints.length;
    this.moves += 1;
  }
}
