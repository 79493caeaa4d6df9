/**
 * Records at the HTTP boundary, as the SDK's Transport: every request the SDK
 * makes — its retries, the heartbeats and renewals it sends by itself, the
 * grants it gives back — is one operation with its own invoke and complete.
 * Recording at the public SDK calls instead would hide exactly those: a grant
 * the SDK discarded, a renewal in the background, a retried L4 whose first
 * answer was lost. The checker judges the server, so it sees what the server saw.
 *
 * One RecordingTransport per (client, endpoint), so each record names the
 * instance that answered. A `Gate` shared by one client's transports freezes
 * its traffic both ways (a paused client: nothing leaves, no answer arrives),
 * while the SDK's own timers run on (its timeouts turn into unknown outcomes).
 */
import type { Transport, TransportRequest, TransportResponse } from '../../client/transport.js';
import type { OpFunction } from './format.js';
import type { Completion, HistoryRecorder, Invocation } from './recorder.js';

export class Gate {
  #closed: { promise: Promise<void>; open: () => void } | undefined;

  close(): void {
    if (this.#closed) return;
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    this.#closed = { promise, open };
  }

  open(): void {
    this.#closed?.open();
    this.#closed = undefined;
  }

  /** Resolves when open; rejects with the signal's reason if it aborts first. */
  async pass(signal?: AbortSignal): Promise<void> {
    while (this.#closed) {
      const closed = this.#closed.promise;
      if (!signal) {
        await closed;
        continue;
      }
      if (signal.aborted) throw signal.reason;
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
        void closed.then(() => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        });
      });
    }
  }
}

export class RecordingTransport implements Transport {
  constructor(
    private readonly inner: Transport,
    private readonly recorder: HistoryRecorder,
    private readonly process: string,
    private readonly endpoint: string,
    private readonly gate: Gate = new Gate(),
  ) {}

  async send(request: TransportRequest): Promise<TransportResponse> {
    const invocation = classify(request, this.process, this.endpoint);
    if (!invocation) return this.forward(request);
    const finish = this.recorder.invoke(invocation);
    try {
      const response = await this.forward(request);
      finish(completionOf(invocation.f, response));
      return response;
    } catch (error) {
      finish(failureOf(error));
      throw error;
    }
  }

  private async forward(request: TransportRequest): Promise<TransportResponse> {
    await this.gate.pass(request.signal);
    const response = await this.inner.send(request);
    await this.gate.pass(request.signal);
    return response;
  }
}

const ROUTES: { method: string; pattern: RegExp; f: OpFunction; target: 'session' | 'key' | 'none' }[] = [
  { method: 'POST', pattern: /^\/v1\/sessions$/, f: 'open', target: 'none' },
  { method: 'POST', pattern: /^\/v1\/sessions\/([^/]+)\/heartbeat$/, f: 'heartbeat', target: 'session' },
  { method: 'DELETE', pattern: /^\/v1\/sessions\/([^/]+)$/, f: 'close', target: 'session' },
  { method: 'POST', pattern: /^\/v1\/locks\/([^/]+)\/acquire$/, f: 'acquire', target: 'key' },
  { method: 'POST', pattern: /^\/v1\/locks\/([^/]+)\/renew$/, f: 'renew', target: 'key' },
  { method: 'POST', pattern: /^\/v1\/locks\/([^/]+)\/release$/, f: 'release', target: 'key' },
  { method: 'GET', pattern: /^\/v1\/locks\/([^/?]+)$/, f: 'read', target: 'key' },
  { method: 'POST', pattern: /^\/v1\/admin\/locks\/([^/]+)\/revoke$/, f: 'revoke', target: 'key' },
  { method: 'POST', pattern: /^\/v1\/admin\/sessions\/([^/]+)\/kill$/, f: 'kill', target: 'session' },
];

/** The request's operation, or undefined for routes the history does not judge (metrics, admin lists). */
export function classify(request: Pick<TransportRequest, 'method' | 'path' | 'body'>, process: string, endpoint: string): Invocation | undefined {
  for (const route of ROUTES) {
    const match = request.method === route.method ? route.pattern.exec(request.path) : null;
    if (!match) continue;
    const body = (typeof request.body === 'object' && request.body !== null ? request.body : {}) as Record<string, unknown>;
    const args: Record<string, string | number | boolean> = {};
    for (const field of ['ttlMillis', 'waitMillis', 'fencingToken', 'mode', 'limit', 'expectedFencingToken', 'owner'] as const) {
      const value = body[field];
      if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') args[field] = value;
    }
    // Every acquire names its kind, so a reader of the history never has to know the defaults.
    if (route.f === 'acquire') {
      args.mode ??= 'exclusive';
      args.limit ??= 1;
    }
    const target = match[1] === undefined ? undefined : decodeURIComponent(match[1]);
    const sessionId = route.target === 'session' ? target : typeof body.sessionId === 'string' ? body.sessionId : undefined;
    return {
      process,
      f: route.f,
      args,
      endpoint,
      ...(sessionId !== undefined ? { sessionId } : {}),
      ...(route.target === 'key' && target !== undefined ? { key: target } : {}),
    };
  }
  return undefined;
}

const KEPT = ['sessionId', 'fencingToken', 'ttlMillis', 'held', 'mode', 'limit', 'outcome', 'revokedFencingToken', 'released'] as const;

/** 2xx: ok. 4xx: refused, nothing changed. 5xx: unknown (a store that timed out may still have committed). */
export function completionOf(f: OpFunction, response: TransportResponse): Completion {
  const body = (typeof response.body === 'object' && response.body !== null ? response.body : {}) as Record<string, unknown>;
  if (response.status >= 200 && response.status < 300) {
    const result: Record<string, string | number | boolean> = {};
    for (const field of KEPT) {
      const value = body[field];
      if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') result[field] = value;
    }
    // L7 names the holder's session: that is not the session the read acts as.
    return { outcome: 'ok', result, ...(f === 'open' && typeof body.sessionId === 'string' ? { sessionId: body.sessionId } : {}) };
  }
  const error = (typeof body.error === 'object' && body.error !== null ? body.error : {}) as { code?: unknown };
  return {
    outcome: response.status >= 500 ? 'unknown' : 'fail',
    error: { status: response.status, ...(typeof error.code === 'string' ? { code: error.code } : {}) },
  };
}

/** No answer: unknown, except a connection refused before the request could be sent (nothing reached the server). */
export function failureOf(error: unknown): Completion {
  const cause = (error as { cause?: { code?: string } } | undefined)?.cause;
  const message = error instanceof Error ? `${error.name}: ${error.message}`.slice(0, 160) : String(error);
  if (cause?.code === 'ECONNREFUSED') return { outcome: 'fail', error: { message: `refused: ${message}` } };
  return { outcome: 'unknown', error: { message } };
}
