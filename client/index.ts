/**
 * Holdfast TypeScript SDK (contract C2, docs/contracts/C2-sdk.md).
 *
 * Depends on the HTTP contract only; the application brings its own
 * prom-client Registry and OpenTelemetry SDK if it wants meters and spans.
 */
export { LockClient, DEFAULT_SAFETY_MARGIN_MILLIS } from './client.js';
export type { LockClientOptions, OpenSessionOptions } from './client.js';
export type { MetricsRegistry, TracerProviderLike } from './peer-types.js';
export { LockSession } from './session.js';
export type { AcquireOptions } from './session.js';
export { LockHandle } from './handle.js';
export { Leadership } from './leadership.js';
export type { CampaignOptions } from './leadership.js';
export { LeaderObserver, DEFAULT_OBSERVE_WAIT_MILLIS } from './observe.js';
export type { ObserveOptions } from './observe.js';
export type { Leader } from './values.js';
export { AcquirePolicy, MAX_WAIT_MILLIS } from './policy.js';
export type { AcquirePolicyInit } from './policy.js';
export { Backoff } from './backoff.js';
export { systemClock, startTimer } from './clock.js';
export type { Clock, Timer } from './clock.js';
export { ManualClock } from './manual-clock.js';
export { seededRandom, freshRandom } from './random.js';
export type { RandomSource } from './random.js';
export { FetchTransport } from './transport.js';
export { KeepAliveHttpTransport } from './keep-alive-http-transport.js';
export { HttpProtocolError } from './http1-response-parser.js';
export { NodeHttpTransport } from './node-http-transport.js';
export type { NodeHttpTransportOptions } from './node-http-transport.js';
export { EndpointsTransport, EndpointsUnansweredError } from './endpoints.js';
export type { Transport, TransportRequest, TransportResponse, HttpMethod } from './transport.js';
export { fenced, fencedRead, fencedWrite, compareFencingTokens } from './fenced.js';
export type { FenceStore, ReadWriteFence } from './fenced.js';
export { canonicalKeyOrder, validateKey } from './keys.js';
export {
  HoldfastClientError,
  ValidationError,
  NotLeaderError,
  LockLostError,
  HoldLimitReachedError,
  SessionLostError,
  FencedOutError,
  DeadlockDetectedError,
  LimitMismatchError,
  ServerError,
  TransportError,
} from './errors.js';
export type { ClientErrorCode, LockLossCode, SessionLossCause } from './errors.js';
export type { ClientLogger } from './logger.js';
export type { FencingToken, LockGrant, LockHolder, LockInfo, LockMode } from './wire.js';
