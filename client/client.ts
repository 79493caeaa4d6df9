/**
 * The entry point: `new LockClient({ baseUrl })`, then `openSession()`.
 *
 * Everything with time or chance in it is injectable — `clock`, `random`,
 * `transport` — so tests and simulations replay exactly. Meters go to the
 * `registry` the application passes (none: no meters); spans go to the
 * application's OpenTelemetry tracer provider (none registered: no-ops).
 */
import type { MetricsRegistry as Registry, TracerProviderLike as TracerProvider } from './peer-types.js';
import { failureToError, LockApi } from './api.js';
import { systemClock, type Clock } from './clock.js';
import { EndpointsTransport } from './endpoints.js';
import { ValidationError } from './errors.js';
import { validateKey } from './keys.js';
import { SILENT_LOGGER, type ClientLogger } from './logger.js';
import { createSdkMeters } from './meters.js';
import { LeaderObserver, type ObserveOptions } from './observe.js';
import { AcquirePolicy, type AcquirePolicyInit } from './policy.js';
import { freshRandom, type RandomSource } from './random.js';
import { RoundTripEstimator } from './rtt.js';
import type { ClientRuntime } from './runtime.js';
import { LockSession } from './session.js';
import { AcquireTracer } from './tracing.js';
import { retryTransient, SHORT_BUDGET } from './transient.js';
import { KeepAliveHttpTransport } from './keep-alive-http-transport.js';
import { NodeHttpTransport } from './node-http-transport.js';
import { FetchTransport, type Transport } from './transport.js';
import { TokenWatermark } from './watermark.js';
import type { LockInfo } from './wire.js';

export interface LockClientOptions {
  /**
   * e.g. `http://127.0.0.1:7070`, or several instances of one service (one store):
   * `['http://a:7070', 'http://b:7070']`. With several, a request that is refused,
   * reset, unanswered in time or answered 503 moves the client to the next endpoint
   * (client/endpoints.ts); the session, its token and its locks carry over.
   * Required unless `transport` is given.
   */
  baseUrl?: string | readonly string[];
  /**
   * Replaces the default HTTP transport (node:http with a keep-alive pool per
   * endpoint): simulations, your own agent (`new NodeHttpTransport(url, { agent })`),
   * or `new FetchTransport(url)` where node:http is missing.
   */
  transport?: Transport;
  /**
   * Bearer token for opening sessions (L1) and reading locks (L7), needed when the
   * server's tokens file has `client` entries (any role's token works). Sessions
   * then authenticate with their own session token; this one is not sent on L2–L6.
   */
  token?: string;
  /** Monotonic time and sleeps. Default: `performance.now()` and real timers. */
  clock?: Clock;
  /** Jitter source. Default: a per-client source seeded from the OS; pass `seededRandom(n)` to replay. */
  random?: RandomSource;
  /** A prom-client Registry of the application's for the SDK's two meters. */
  registry?: Registry;
  /** Default: the globally registered OpenTelemetry provider (a no-op unless the app set one). */
  tracerProvider?: TracerProvider;
  /** pino-compatible `debug`/`warn`. Default: silent. */
  logger?: ClientLogger;
  /**
   * Subtracted from every TTL when computing conservative deadlines (capped at a
   * quarter of the TTL). Default: `LOCK_CLIENT_SAFETY_MARGIN_MS` or 1,000.
   */
  safetyMarginMillis?: number;
  /**
   * How long one L4 may go unanswered beyond its server-side wait before the
   * acquire loop retries it (always within the budget). Default 2,000.
   */
  requestTimeoutMillis?: number;
  /** The policy for acquires that pass none. Default: AcquirePolicy.DEFAULT. */
  defaultPolicy?: AcquirePolicy | AcquirePolicyInit;
}

export interface OpenSessionOptions {
  /** 1,000–300,000 ms; the server's default (15 s) when omitted. */
  ttlMillis?: number;
  /** Shown in the console and audit trail; ≤ 128 characters. */
  owner?: string;
}

export const DEFAULT_SAFETY_MARGIN_MILLIS = 1_000;

export class LockClient {
  readonly #rt: ClientRuntime;

  constructor(options: LockClientOptions) {
    const transport = options.transport ?? transportFor(options.baseUrl);
    this.#rt = {
      api: new LockApi(transport, options.token),
      clock: options.clock ?? systemClock,
      random: options.random ?? freshRandom(),
      meters: createSdkMeters(options.registry),
      tracer: new AcquireTracer(options.tracerProvider),
      logger: options.logger ?? SILENT_LOGGER,
      rtt: new RoundTripEstimator(),
      watermark: new TokenWatermark(),
      defaultPolicy: AcquirePolicy.from(options.defaultPolicy),
      safetyMarginMillis: marginFrom(options.safetyMarginMillis),
      requestTimeoutMillis: positiveInteger('requestTimeoutMillis', options.requestTimeoutMillis ?? 2_000),
      lastBackend: undefined,
    };
  }

  /** Open a session (L1) and start heartbeating it. Close it with `session.close()`. */
  async openSession(options: OpenSessionOptions = {}): Promise<LockSession> {
    const { api, clock, random } = this.#rt;
    const body = {
      ...(options.ttlMillis === undefined ? {} : { ttlMillis: options.ttlMillis }),
      ...(options.owner === undefined ? {} : { owner: options.owner }),
    };
    // Measured from the last attempt's send: the session cannot have started earlier than that.
    let sentAt = clock.now();
    const answer = await retryTransient(clock, random, SHORT_BUDGET, 'the session open', (timeout) => {
      sentAt = clock.now();
      return api.openSession(body, timeout);
    });
    if (!answer.ok) throw failureToError(answer);
    if (answer.backend !== undefined) this.#rt.lastBackend = answer.backend;
    return new LockSession(this.#rt, answer.value, sentAt, answer.backend);
  }

  /** Who holds `key` right now (L7). */
  async readLock(rawKey: string): Promise<LockInfo> {
    const key = validateKey(rawKey);
    const { api, clock, random } = this.#rt;
    const answer = await retryTransient(clock, random, SHORT_BUDGET, 'the lock read', (timeout) =>
      api.readLock(key, timeout),
    );
    if (!answer.ok) throw failureToError(answer);
    return answer.value;
  }

  /**
   * The leader of election key `name` (v3), as an async iterator: the current leader
   * `{owner, value, term}` or `null` (none) at once, then one item per change, built on
   * L8 long polls that resume from the last seen term after a dropped connection, 5xx or
   * NOT_LEADER — so no new leader is missed. Ends when `options.signal` aborts or the loop
   * breaks. Needs no session: it sends the client token, as `readLock` does.
   */
  observe(rawName: string, options: ObserveOptions = {}): LeaderObserver {
    const key = validateKey(rawName);
    const { api, clock, random, logger, requestTimeoutMillis } = this.#rt;
    return new LeaderObserver({ api, clock, random, logger, requestTimeoutMillis }, key, options);
  }
}

function transportFor(baseUrl: string | readonly string[] | undefined): Transport {
  const urls = typeof baseUrl === 'string' ? [baseUrl] : [...(baseUrl ?? [])];
  if (urls.length === 0 || urls.some((url) => typeof url !== 'string' || url === '')) {
    throw new ValidationError('LockClient needs a baseUrl (e.g. http://127.0.0.1:7070, or a list of them) or a transport');
  }
  if (urls.length === 1) return endpointTransport(urls[0]!);
  return new EndpointsTransport(urls.map(endpointTransport));
}

/**
 * One pool per endpoint: plain http: on bare kept-alive sockets, https: through node:http's TLS
 * agent; a URL neither can speak to goes through fetch, which fails as it always did.
 */
function endpointTransport(url: string): Transport {
  if (KeepAliveHttpTransport.supports(url)) return new KeepAliveHttpTransport(url);
  return NodeHttpTransport.supports(url) ? new NodeHttpTransport(url) : new FetchTransport(url);
}

function marginFrom(option: number | undefined): number {
  const fromEnv = process.env.LOCK_CLIENT_SAFETY_MARGIN_MS;
  const value = option ?? (fromEnv !== undefined && fromEnv !== '' ? Number(fromEnv) : DEFAULT_SAFETY_MARGIN_MILLIS);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new ValidationError(`safety margin must be a non-negative integer of ms, got ${String(value)}`);
  }
  return value;
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new ValidationError(`${name} must be a positive integer, got ${String(value)}`);
  }
  return value;
}
