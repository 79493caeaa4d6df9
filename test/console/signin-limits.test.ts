/**
 * Issue 24, item 7 (console sign-in): failed sign-ins are rate-limited per client
 * address and per code (429 RATE_LIMITED with Retry-After), on the one-time-code
 * path, the pasted-token path and the code-minting route; and pending sign-in
 * codes are kept per issuer, so another token holder minting codes in a loop
 * cannot push out the operator's link.
 *
 * Calls the real route handlers (app/api/auth, app/api/auth/codes) with a fake
 * lock server answering /v1/admin/whoami and K1–K5 (issue 25: the lock server keeps
 * codes and console sessions; the fake runs the server's own rules,
 * lock/http/console-sign-in.ts, on in-memory records), a cookie jar standing in for
 * next/headers, and both clocks replaced (the console's, process-state.ts, and the
 * fake store's), so windows pass without sleeping.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';

const jar = vi.hoisted(() => new Map<string, string>());
vi.mock('next/headers', () => ({
  cookies: async () => ({
    get: (name: string) => (jar.has(name) ? { name, value: jar.get(name)! } : undefined),
    set: (name: string, value: string) => void jar.set(name, value),
  }),
}));

import { POST as signIn } from '../../app/api/auth/route.js';
import { POST as mintCode } from '../../app/api/auth/codes/route.js';
import { processState } from '../../app/lib/server/process-state.js';
import { SIGNIN_CODE_TTL_MILLIS } from '../../app/lib/server/signin-codes.js';
import {
  chargeSignInAttempt,
  clientAddress,
  MAX_FAILURES_PER_ADDRESS,
  MAX_TRACKED_ADDRESSES,
  SIGNIN_FAILURE_WINDOW_MILLIS,
} from '../../app/lib/server/signin-limits.js';
import { CONSOLE_SIGN_IN, ConsoleSignIn } from '../../lock/http/console-sign-in.js';
import { MemoryConsoleRecords } from '../../lock/store/memory/memory-console-records.js';

const MAX_FAILURES_PER_CODE = CONSOLE_SIGN_IN.maxMissesPerCode;
const MAX_PENDING_CODES = CONSOLE_SIGN_IN.maxCodes;
const MAX_PENDING_CODES_PER_ISSUER = CONSOLE_SIGN_IN.maxCodesPerIssuer;

const CONSOLE = 'http://console.test';
const OPERATOR = { token: 'operator-token-0123456789abcdef0123456789', name: 'ops', role: 'operator' };
const VIEWER = { token: 'viewer-token-0123456789abcdef0123456789ab', name: 'dashboards', role: 'viewer' };
const TOKENS = new Map([OPERATOR, VIEWER].map((entry) => [entry.token, entry]));

let server: Server;
let whoamiCalls = 0;
let now = 1_700_000_000_000;
let records = new MemoryConsoleRecords(() => now);
const signIns = () => new ConsoleSignIn(records, () => now);

/** The lock server's answers the console relies on: whoami, and K1–K5 with the server's own rules. */
async function answer(method: string, url: string, entry: (typeof OPERATOR) | undefined, body: any): Promise<[number, unknown]> {
  const unauthenticated: [number, unknown] = [401, { error: { code: 'UNAUTHENTICATED', message: 'unknown token', retryable: false } }];
  const issuer = entry && { name: entry.name, role: entry.role as 'viewer' | 'operator' };
  if (url === '/v1/admin/whoami') {
    whoamiCalls++;
    return issuer ? [200, issuer] : unauthenticated;
  }
  if (method === 'POST' && url === '/v1/console/codes/redeem') {
    const redeemed = await signIns().redeemCode(body.code);
    return redeemed.outcome === 'REFUSED' ? unauthenticated : [200, redeemed];
  }
  if (!issuer) return unauthenticated;
  if (method === 'POST' && url === '/v1/console/codes') return [201, await signIns().mintCode(issuer, body.sealedToken)];
  if (method === 'POST' && url === '/v1/console/sessions') return [201, { ...(await signIns().openSession(issuer)), ...issuer }];
  const session = /^\/v1\/console\/sessions\/([^/]+)$/.exec(url)?.[1];
  if (session && method === 'GET') {
    const live = await signIns().checkSession(issuer.name, session);
    return live ? [200, { consoleSessionId: session, ...issuer, ...live }] : [404, { error: { code: 'SESSION_NOT_FOUND', message: 'ended', retryable: false } }];
  }
  if (session && method === 'DELETE') return [204, undefined];
  return [404, { error: { code: 'NOT_FOUND', message: 'no route', retryable: false } }];
}

beforeAll(async () => {
  server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk) => (text += chunk));
    request.on('end', () => {
      const entry = TOKENS.get((request.headers.authorization ?? '').replace(/^Bearer /, ''));
      void answer(request.method!, request.url!, entry, text ? JSON.parse(text) : undefined).then(([status, body]) => {
        response.statusCode = status;
        if (body === undefined) return response.end();
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify(body));
      });
    });
  });
  // The lock server's own idle keep-alive (Fastify's 72 s), not node's 5 s: the console's fetch keeps idle
  // sockets 4 s, and on a busy machine node's close of one it was about to reuse surfaced as ECONNRESET.
  server.keepAliveTimeout = 72_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.env.HOLDFAST_URL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  const state = processState();
  records = new MemoryConsoleRecords(() => now);
  state.failures.byAddress.clear();
  state.clock = () => now;
  jar.clear();
  whoamiCalls = 0;
});

function advance(ms: number): void {
  now += ms;
}

function signInWith(body: unknown, address: string): Promise<Response> {
  return signIn(
    new Request(`${CONSOLE}/api/auth`, {
      method: 'POST',
      headers: { origin: CONSOLE, 'x-forwarded-host': 'console.test', 'content-type': 'application/json', 'x-forwarded-for': address },
      body: JSON.stringify(body),
    }),
  );
}

async function mint(token: string, address = '10.0.0.1'): Promise<Response> {
  return mintCode(new Request(`${CONSOLE}/api/auth/codes`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': address } }));
}

async function mintedCode(token: string): Promise<string> {
  const response = await mint(token);
  expect(response.status).toBe(201);
  return ((await response.json()) as { code: string }).code;
}

/** A code of the right shape that was never minted. */
function randomCode(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('base64url');
}

/** The 429 answer: pinned body (exactly code, message, retryable), retryable, with Retry-After in whole seconds. */
async function expectRateLimited(response: Response, retryAfterSeconds: number): Promise<void> {
  expect(response.status).toBe(429);
  expect(response.headers.get('retry-after')).toBe(String(retryAfterSeconds));
  const body = (await response.json()) as { error: Record<string, unknown> };
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'retryable']);
  expect(body.error).toMatchObject({ code: 'RATE_LIMITED', retryable: true });
  expect(body.error.message).toContain(`try again in ${retryAfterSeconds} s`);
}

describe('one-time codes: failures limited per address', () => {
  it(`after ${MAX_FAILURES_PER_ADDRESS} wrong codes an address gets 429 with Retry-After; the right code from another address still signs in`, async () => {
    const operatorCode = await mintedCode(OPERATOR.token);
    for (let i = 0; i < MAX_FAILURES_PER_ADDRESS; i++) {
      expect((await signInWith({ code: randomCode() }, '203.0.113.7')).status).toBe(401);
      advance(1_000);
    }
    // The first failure was 10 s ago: the window frees a try 50 s from now.
    await expectRateLimited(await signInWith({ code: randomCode() }, '203.0.113.7'), 50);
    // Not even checked: the operator's code sent from the throttled address is refused and stays pending.
    await expectRateLimited(await signInWith({ code: operatorCode }, '203.0.113.7'), 50);

    const elsewhere = await signInWith({ code: operatorCode }, '198.51.100.20');
    expect(elsewhere.status).toBe(200);
    expect(await elsewhere.json()).toMatchObject({ name: 'ops', role: 'operator' });
    expect(jar.size).toBe(1); // the session cookie was set

    advance(50_000);
    expect((await signInWith({ code: randomCode() }, '203.0.113.7')).status).toBe(401);
    expect((await signInWith({ code: randomCode() }, '203.0.113.7')).status).toBe(429);
  });
});

describe('pasted tokens: failures limited per address', () => {
  it(`after ${MAX_FAILURES_PER_ADDRESS} wrong tokens an address gets 429 without the lock server being asked; the operator token from another address still signs in`, async () => {
    for (let i = 0; i < MAX_FAILURES_PER_ADDRESS; i++) {
      expect((await signInWith({ token: `guess-${i}-0123456789abcdef` }, '203.0.113.8')).status).toBe(401);
    }
    expect(whoamiCalls).toBe(MAX_FAILURES_PER_ADDRESS);
    await expectRateLimited(await signInWith({ token: 'guess-last-0123456789abcdef' }, '203.0.113.8'), 60);
    await expectRateLimited(await signInWith({ token: OPERATOR.token }, '203.0.113.8'), 60);
    expect(whoamiCalls).toBe(MAX_FAILURES_PER_ADDRESS);

    const elsewhere = await signInWith({ token: OPERATOR.token }, '198.51.100.21');
    expect(elsewhere.status).toBe(200);
    expect(await elsewhere.json()).toMatchObject({ name: 'ops', role: 'operator' });

    advance(SIGNIN_FAILURE_WINDOW_MILLIS);
    expect((await signInWith({ token: OPERATOR.token }, '203.0.113.8')).status).toBe(200);
  });

  it('parallel wrong tokens cannot all slip past the limit before the first answer', async () => {
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => signInWith({ token: `parallel-${i}-0123456789abcdef` }, '203.0.113.9')),
    );
    const statuses = answers.map((response) => response.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(MAX_FAILURES_PER_ADDRESS);
    expect(statuses.filter((status) => status === 429)).toHaveLength(30 - MAX_FAILURES_PER_ADDRESS);
    expect(whoamiCalls).toBe(MAX_FAILURES_PER_ADDRESS);
  });

  it('a success does not wipe earlier failures (a viewer token cannot reset the count while guessing)', async () => {
    for (let i = 0; i < MAX_FAILURES_PER_ADDRESS - 1; i++) {
      expect((await signInWith({ token: `guess-${i}-0123456789abcdef` }, '203.0.113.10')).status).toBe(401);
    }
    expect((await signInWith({ token: VIEWER.token }, '203.0.113.10')).status).toBe(200);
    expect((await signInWith({ token: 'one-more-guess-0123456789abcdef' }, '203.0.113.10')).status).toBe(401);
    expect((await signInWith({ token: VIEWER.token }, '203.0.113.10')).status).toBe(429);
  });

  it('wrong bearer tokens on the code-minting route count the same way', async () => {
    for (let i = 0; i < MAX_FAILURES_PER_ADDRESS; i++) expect((await mint(`mint-guess-${i}-0123456789abcdef`, '203.0.113.11')).status).toBe(401);
    await expectRateLimited(await mint(OPERATOR.token, '203.0.113.11'), 60);
    await expectRateLimited(await signInWith({ token: OPERATOR.token }, '203.0.113.11'), 60);
    expect((await mint(OPERATOR.token, '203.0.113.12')).status).toBe(201);
  });

  it('an unreachable lock server is no failure of the address', async () => {
    const url = process.env.HOLDFAST_URL;
    process.env.HOLDFAST_URL = 'http://127.0.0.1:9'; // discard port: connection refused
    try {
      for (let i = 0; i < MAX_FAILURES_PER_ADDRESS + 2; i++) {
        expect((await signInWith({ token: OPERATOR.token }, '203.0.113.13')).status).toBe(502);
      }
    } finally {
      process.env.HOLDFAST_URL = url;
    }
    expect((await signInWith({ token: OPERATOR.token }, '203.0.113.13')).status).toBe(200);
  });
});

describe('one-time codes: failures limited per code', () => {
  it(`${MAX_FAILURES_PER_CODE} wrong secrets for a pending code, each from its own address, lock that code (429 for everyone) until the window passes`, async () => {
    const code = await mintedCode(OPERATOR.token);
    const id = code.slice(0, 8);
    for (let i = 0; i < MAX_FAILURES_PER_CODE; i++) {
      const guess = id + randomCode().slice(8);
      expect((await signInWith({ code: guess }, `192.0.2.${i + 1}`)).status).toBe(401);
    }
    await expectRateLimited(await signInWith({ code: id + randomCode().slice(8) }, '192.0.2.100'), 60);
    // Locked out: the right secret is refused too, from any address, so a lucky guess would be worth nothing.
    await expectRateLimited(await signInWith({ code }, '198.51.100.30'), 60);
    // Other codes are not affected.
    const other = await mintedCode(OPERATOR.token);
    expect((await signInWith({ code: other }, '198.51.100.31')).status).toBe(200);
    // The wrong guesses did not burn the code: once the window passes (within its TTL) its owner can use it.
    advance(SIGNIN_FAILURE_WINDOW_MILLIS);
    expect((await signInWith({ code }, '198.51.100.30')).status).toBe(200);
    expect((await signInWith({ code }, '198.51.100.30')).status).toBe(401); // once
  });
});

describe('pending codes are kept per issuer', () => {
  it('another token holder minting 100 codes does not push out the operator’s pending code', async () => {
    const operatorCode = await mintedCode(OPERATOR.token);
    const viewerCodes: string[] = [];
    for (let i = 0; i < 100; i++) viewerCodes.push(await mintedCode(VIEWER.token));

    const operator = await signInWith({ code: operatorCode }, '198.51.100.40');
    expect(operator.status).toBe(200);
    expect(await operator.json()).toMatchObject({ name: 'ops', role: 'operator' });

    // The viewer's own oldest codes went (its cap), its newest still work.
    expect(await records.list('code', '', 10_000)).toHaveLength(MAX_PENDING_CODES_PER_ISSUER);
    expect((await signInWith({ code: viewerCodes[0] }, '198.51.100.41')).status).toBe(401);
    expect((await signInWith({ code: viewerCodes[99] }, '198.51.100.41')).status).toBe(200);
  });

  it('an issuer’s own cap drops its oldest code; expired codes sign nobody in', async () => {
    const codes: string[] = [];
    for (let i = 0; i <= MAX_PENDING_CODES_PER_ISSUER; i++) codes.push(await mintedCode(OPERATOR.token));
    expect((await signInWith({ code: codes[0] }, '198.51.100.42')).status).toBe(401);
    expect((await signInWith({ code: codes[1] }, '198.51.100.42')).status).toBe(200);
    advance(SIGNIN_CODE_TTL_MILLIS);
    expect((await signInWith({ code: codes[2] }, '198.51.100.42')).status).toBe(401);
  });

  it(`at the overall cap (${MAX_PENDING_CODES}) the issuer with the most pending codes loses its oldest, not one with fewer`, async () => {
    const operatorCode = await mintedCode(OPERATOR.token);
    const pending = async () => (await records.list('code', '', 10_000)).length;
    for (let issuer = 0; (await pending()) < MAX_PENDING_CODES; issuer++) {
      for (let i = 0; i < MAX_PENDING_CODES_PER_ISSUER; i++) await signIns().mintCode({ name: `issuer-${issuer}`, role: 'viewer' }, 'sealed');
    }
    for (let i = 0; i < 50; i++) await signIns().mintCode({ name: 'late', role: 'viewer' }, 'sealed');
    expect(await pending()).toBe(MAX_PENDING_CODES);
    const operator = await signInWith({ code: operatorCode }, '198.51.100.43');
    expect(operator.status, await operator.clone().text()).toBe(200);
    expect(await operator.json()).toMatchObject({ name: 'ops' });
  }, 60_000);
});

describe('client address and bounded memory', () => {
  it('the address is the last X-Forwarded-For entry (the peer next start or the proxy saw); IPv6 counts per /64', () => {
    const of = (value: string | undefined) =>
      clientAddress(new Request(CONSOLE, { headers: value === undefined ? {} : { 'x-forwarded-for': value } }));
    expect(of('203.0.113.7')).toBe('203.0.113.7');
    expect(of('1.2.3.4, 203.0.113.7')).toBe('203.0.113.7');
    expect(of('203.0.113.7:51234')).toBe('203.0.113.7');
    expect(of('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(of('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(of('[2001:db8:1:2:bbbb::9]:443')).toBe('2001:db8:1:2::/64');
    expect(of('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(of('::1')).toBe('0:0:0:0::/64');
    expect(of('not-an-address')).toBe('unparsed');
    expect(of('also garbage')).toBe('unparsed');
    expect(of(undefined)).toBe('unknown');
  });

  it(`at most ${MAX_TRACKED_ADDRESSES} addresses are tracked; the least recently failing is forgotten first`, () => {
    for (let i = 0; i < MAX_TRACKED_ADDRESSES + 500; i++) chargeSignInAttempt(`addr-${i}`, now);
    const tracked = processState().failures.byAddress;
    expect(tracked.size).toBe(MAX_TRACKED_ADDRESSES);
    expect(tracked.has('addr-0')).toBe(false);
    expect(tracked.has(`addr-${MAX_TRACKED_ADDRESSES + 499}`)).toBe(true);
  });
});
