/**
 * Failed console sign-ins are rate-limited per client address (issue 24): a wrong one-time code, a
 * wrong pasted token and a wrong bearer token on POST /api/auth/codes each count as a failure of the
 * address that sent it. An address with MAX_FAILURES_PER_ADDRESS failures in the last
 * SIGNIN_FAILURE_WINDOW_MILLIS gets `429 RATE_LIMITED` with `Retry-After` — without its credential
 * being checked — until the oldest of them leaves the window. The per-code limit (five wrong
 * secrets lock a pending code for everyone) is the lock server's, so it holds across console
 * replicas (K2, issue 25); these per-address counts are per console process (docs/console.md).
 *
 * A failure is charged before the credential is checked and refunded when it turns out right (or
 * when the lock server could not say), so parallel attempts cannot all slip past the check
 * together. A success does not wipe earlier failures: whoever holds one valid token (a viewer's,
 * say) cannot use it to reset its count while guessing another.
 *
 * Other clients' failures never block an address: no limit is global. Memory is bounded: at most
 * MAX_TRACKED_ADDRESSES addresses (the least recently failing is forgotten first), each with at
 * most its limit of timestamps.
 *
 * The client address is the last `X-Forwarded-For` entry: `next start` sets the
 * header to the connection's peer address when the request has none, and a
 * reverse proxy in front appends the peer it saw. A client that reaches
 * `next start` directly can send its own header and so pick its address; the
 * per-code limit and the codes' and tokens' entropy still hold then
 * (docs/console.md). IPv6 addresses count per /64, IPv4-mapped IPv6 as IPv4.
 */
import { isIP } from 'node:net';
import { consoleNow, processState } from './process-state';
import { errorBody } from './upstream';

export const SIGNIN_FAILURE_WINDOW_MILLIS = 60_000;
export const MAX_FAILURES_PER_ADDRESS = 10;
export const MAX_TRACKED_ADDRESSES = 10_000;

/** Console-only error code (like SERVER_UNREACHABLE): too many failed sign-ins; retry after `Retry-After` seconds. */
export const RATE_LIMITED = 'RATE_LIMITED';

type FailureLog = Map<string, number[]>;

/** A failure charged to an address before its credential is checked; refund it if the credential was right. */
export interface ChargedAttempt {
  refund(): void;
}

/**
 * Before checking a credential from `address`: charge it a failure, or — when the
 * address has used up its failures — answer how long it must wait instead.
 */
export function chargeSignInAttempt(address: string, now = consoleNow()): ChargedAttempt | { retryAfterMillis: number } {
  const log = processState().failures.byAddress;
  const wait = blockedFor(log, address, MAX_FAILURES_PER_ADDRESS, now);
  if (wait > 0) return { retryAfterMillis: wait };
  record(log, address, MAX_FAILURES_PER_ADDRESS, MAX_TRACKED_ADDRESSES, now);
  return {
    refund() {
      const times = log.get(address);
      const at = times?.lastIndexOf(now) ?? -1;
      if (times && at >= 0) times.splice(at, 1);
      if (times?.length === 0) log.delete(address);
    },
  };
}

/** The 429 answer: the C3 error body, retryable, with `Retry-After` in whole seconds (at least 1). */
export function rateLimited(retryAfterMillis: number, what: string): Response {
  const seconds = Math.max(1, Math.ceil(retryAfterMillis / 1000));
  return Response.json(errorBody(RATE_LIMITED, `${what}; try again in ${seconds} s`, true), {
    status: 429,
    headers: { 'cache-control': 'no-store', 'retry-after': String(seconds) },
  });
}

/** The address failures are counted against (see the header comment). */
export function clientAddress(request: Request): string {
  const last = request.headers.get('x-forwarded-for')?.split(',').pop()?.trim() ?? '';
  if (last === '') return 'unknown';
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(last);
  const withPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(last);
  const address = bracketed?.[1] ?? withPort?.[1] ?? last;
  switch (isIP(address)) {
    case 4:
      return address;
    case 6: {
      const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
      return mapped ? mapped[1]! : ipv6Slash64(address);
    }
    default:
      // Not an address: every such value shares one count rather than each getting its own.
      return 'unparsed';
  }
}

function ipv6Slash64(address: string): string {
  let text = address.toLowerCase().split('%')[0]!;
  const v4 = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const front = head === '' ? [] : head.split(':');
  const back = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? front : [...front, ...Array<string>(8 - front.length - back.length).fill('0'), ...back];
  return `${groups.slice(0, 4).map((group) => parseInt(group, 16).toString(16)).join(':')}::/64`;
}

/** Milliseconds until `key` may try again: 0 unless it has `limit` failures inside the window. */
function blockedFor(log: FailureLog, key: string, limit: number, now: number): number {
  const times = log.get(key);
  if (times === undefined) return 0;
  const recent = times.filter((at) => at > now - SIGNIN_FAILURE_WINDOW_MILLIS);
  if (recent.length === 0) {
    log.delete(key);
    return 0;
  }
  if (recent.length < times.length) log.set(key, recent);
  if (recent.length < limit) return 0;
  return recent[recent.length - limit]! + SIGNIN_FAILURE_WINDOW_MILLIS - now;
}

function record(log: FailureLog, key: string, limit: number, maxKeys: number, now: number): void {
  const times = (log.get(key) ?? []).filter((at) => at > now - SIGNIN_FAILURE_WINDOW_MILLIS);
  times.push(now);
  while (times.length > limit) times.shift();
  // Re-inserted so the map's order is least recently failing first: that one is forgotten at the cap.
  log.delete(key);
  log.set(key, times);
  while (log.size > maxKeys) log.delete(log.keys().next().value!);
}
