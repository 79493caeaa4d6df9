/**
 * The store's one connection to etcd, and the single place that decides what
 * an etcd failure means for Holdfast.
 *
 * The etcd3 library retries failed calls by default (3 attempts). That is
 * wrong for writes: a txn whose connection broke may already have been
 * applied, and re-sending it blindly can double an audit entry. So the
 * library's global retry is replaced by a pass-through, reads are retried
 * here, and writes resolve ambiguity by reading back (see etcd-store.ts).
 */
import {
  Etcd3,
  isRecoverableError,
  type IOptions,
  type IRangeRequest,
  type IRangeResponse,
  type ITxnRequest,
  type ITxnResponse,
} from 'etcd3';
import { NotLeaderError } from '../../errors.js';

/** Unary calls give up after this, so a request during an election answers NOT_LEADER instead of hanging. */
const DEFAULT_REQUEST_TIMEOUT_MS = 3_000;
const READ_ATTEMPTS = 3;

type GlobalPolicy = NonNullable<NonNullable<IOptions['faultHandling']>['global']>;

/** Runs the call once: retry decisions belong to the store, which knows whether a call is safe to repeat. */
const passThroughPolicy = {
  execute: <T>(fn: (context: { signal: AbortSignal; attempt: number }) => PromiseLike<T> | T) =>
    Promise.resolve().then(() => fn({ signal: new AbortController().signal, attempt: 0 })),
} as unknown as GlobalPolicy;

type HostPolicy = ReturnType<NonNullable<NonNullable<IOptions['faultHandling']>['host']>>;

/** Consecutive unavailable answers that take a host out of rotation, and for how long. */
const HOST_FAILURES_TO_OPEN = 3;
const HOST_OPEN_MS = 1_000;

class BrokenCircuitError extends Error {
  override readonly name = 'BrokenCircuitError';
}

/**
 * Per-host breaker: after a few consecutive failures the pool skips the host
 * for a second, then tries it again. The library's default keeps a host out
 * for 5 s, which after a single-member restart is 5 s of NOT_LEADER for nothing.
 */
function hostBreaker(): HostPolicy {
  let failures = 0;
  let openUntil = 0;
  return {
    execute: async <T>(fn: (context: { signal: AbortSignal; attempt: number }) => PromiseLike<T> | T) => {
      if (Date.now() < openUntil) throw new BrokenCircuitError('etcd host skipped after repeated failures');
      try {
        const result = await fn({ signal: new AbortController().signal, attempt: 0 });
        failures = 0;
        return result;
      } catch (error) {
        if (error instanceof Error && isRecoverableError(error)) {
          failures += 1;
          if (failures >= HOST_FAILURES_TO_OPEN) {
            failures = 0;
            openUntil = Date.now() + HOST_OPEN_MS;
          }
        }
        throw error;
      }
    },
  } as unknown as HostPolicy;
}

const UNAVAILABLE_MESSAGES =
  /no leader|leader changed|timed out|server stopped|too many requests|unavailable|ECONNREFUSED|ECONNRESET|No connection established|circuit|Deadline exceeded|not capable|Connection dropped/i;

/** True when the failure means "etcd cannot answer now" (no leader, member down, timeout), as opposed to a bug. */
export function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (isRecoverableError(error)) return true;
  if (error.name === 'BrokenCircuitError' || error.constructor.name === 'BrokenCircuitError') return true;
  return UNAVAILABLE_MESSAGES.test(error.message);
}

export function notLeader(error: unknown): NotLeaderError {
  const detail = error instanceof Error ? error.message : String(error);
  return new NotLeaderError(`etcd cannot serve the request (no leader or unreachable): ${detail}`);
}

export interface EtcdClientOptions {
  endpoints: string[];
  requestTimeoutMs?: number;
}

export function createEtcdClient(options: EtcdClientOptions): Etcd3 {
  const timeout = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  return new Etcd3({
    hosts: options.endpoints,
    dialTimeout: timeout,
    // Streams (watch, lease keep-alive) live long; only unary calls get a deadline.
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + timeout }),
    faultHandling: { global: passThroughPolicy, host: () => hostBreaker() },
  });
}

/** A read is safe to repeat: try up to READ_ATTEMPTS hosts, then report NOT_LEADER. */
export async function retryRead<T>(read: () => Promise<T>): Promise<T> {
  let lastError: unknown;
  for (let attempt = 0; attempt < READ_ATTEMPTS; attempt += 1) {
    try {
      return await read();
    } catch (error) {
      if (!isUnavailable(error)) throw error;
      lastError = error;
    }
  }
  throw notLeader(lastError);
}

export function range(client: Etcd3, request: IRangeRequest): Promise<IRangeResponse> {
  return retryRead(() => client.kv.range(request));
}

/** A txn with no writes is a consistent multi-key read at one revision. */
export function readTxn(client: Etcd3, request: ITxnRequest): Promise<ITxnResponse> {
  return retryRead(() => client.kv.txn(request));
}
