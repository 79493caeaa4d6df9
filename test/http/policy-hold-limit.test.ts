/**
 * Issue 26 acceptance, `maxHoldMillis` end to end: under a 5 s policy, a lock renewed every second is
 * refused its renewal with 409 HOLD_LIMIT_REACHED once its grant is older than 5 s, and ends at the TTL
 * its last renewal gave it; the SDK's handle reports it lost with that reason; `holdfast lock` exits 4.
 *
 * Needs the core's part of policies (LockServiceOptions.policies, the store-clocked renew refusal):
 * passes once that is merged. Assertions are invariants between the clocks (embedded: the store's
 * clock is this machine's), not timings: a renewal answered 200 was sent before the grant turned 5 s
 * old; the refusal was answered after.
 *
 * Margins for a loaded CI machine. The refusal is HOLD_LIMIT_REACHED only while the grant is still
 * live; a renewal that arrives after the TTL its last renewal gave gets LOCK_LOST instead (and the
 * SDK's watchdog may call the lock lost first, a plain LockLostError). So:
 * - L5 by hand (one a second): the first renewal must land before the limit (5 s − 1 s pause: 4 s
 *   of slack) and the refused one before the previous renewal's TTL runs out (10 s − 1 s: 9 s).
 * - SDK and CLI (TTL 18 s): the first renewal goes out TTL/3 = 6 s after the grant answer — past
 *   the 5 s limit, as a timer never fires early (the delay is at most half of what is left to the
 *   17 s conservative deadline, so it stays ≥ 5 s unless the acquire took over 7 s) — so it is the
 *   one refused, and it has 11 s until that deadline to be answered (abandoned after
 *   min(18/4, 11/2) = 4.5 s and sent again at once; the server's TTL ends 1 s later still).
 *   The limit has to stay below TTL/3: above it, the first renewal would race the limit instead.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LockClient } from '../../client/client.js';
import { HoldLimitReachedError, LockLostError } from '../../client/errors.js';
import { ERROR_TABLE } from '../../contract/error-table.js';
import { holdfast } from '../cli/run-cli.js';
import { eventually, httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';

const MAX_HOLD_MILLIS = 5_000;
/** The SDK's and CLI's lock TTL: a third of it (6 s) is past MAX_HOLD_MILLIS. */
const SDK_TTL_MILLIS = 18_000;
const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-hold-limit-'));
const file = path.join(dir, 'policies.yaml');

let server: TestServer;
beforeAll(async () => {
  writeFileSync(file, `- name: short-hold\n  prefix: hold/\n  maxHoldMillis: ${MAX_HOLD_MILLIS}\n`);
  server = await startServer({ env: { HOLDFAST_POLICIES_FILE: file } });
});
afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const pause = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis));

describe('a 5 s maxHoldMillis policy', () => {
  test('L5 every second: 200 while the grant is younger than 5 s, then 409 HOLD_LIMIT_REACHED; the grant ends at its last TTL', async () => {
    const api = httpClient(server.url);
    const sessionId = (await api.openSession({ owner: 'hold-limit', ttlMillis: 60_000 })).body.sessionId as string;
    const ttlMillis = 10_000; // 9 s more than the 1 s pause between renewals
    const granted = await api.acquire('hold/http', { sessionId, ttlMillis });
    expect(granted.status).toBe(200);
    const { fencingToken, grantedAt } = granted.body as { fencingToken: string; grantedAt: number };

    const renewed: { sentAt: number; expiresAt: number }[] = [];
    let refusal: { answeredAt: number; body: any } | undefined;
    while (!refusal) {
      await pause(1_000);
      const sentAt = Date.now();
      const answer = await api.renew('hold/http', { sessionId, fencingToken, ttlMillis });
      if (answer.status === 200) {
        expect(answer.body.fencingToken).toBe(fencingToken);
        renewed.push({ sentAt, expiresAt: answer.body.expiresAt });
      } else {
        refusal = { answeredAt: Date.now(), body: answer.body };
        expect(answer.status).toBe(409);
      }
      expect(renewed.length).toBeLessThan(10); // a limit that never bites fails here, not at the test timeout
    }

    expect(refusal.body.error).toEqual({ code: 'HOLD_LIMIT_REACHED', message: expect.any(String), retryable: ERROR_TABLE.HOLD_LIMIT_REACHED.retryable });
    expect(refusal.body.error.retryable).toBe(false);
    expect(renewed.length).toBeGreaterThanOrEqual(1);
    for (const renewal of renewed) expect(renewal.sentAt).toBeLessThanOrEqual(grantedAt + MAX_HOLD_MILLIS);
    expect(refusal.answeredAt).toBeGreaterThanOrEqual(grantedAt + MAX_HOLD_MILLIS);

    // Not renewed: still held, with the last renewal's expiry, until that expiry; then free.
    const lastExpiry = renewed.at(-1)!.expiresAt;
    const held = await api.read('hold/http');
    if (held.body.held) expect(held.body).toMatchObject({ fencingToken, expiresAt: lastExpiry });
    // Asking again does not help: refused the same way while it runs out, LOCK_LOST once it has.
    const again = await api.renew('hold/http', { sessionId, fencingToken, ttlMillis });
    expect(again.status).toBe(409);
    expect(['HOLD_LIMIT_REACHED', 'LOCK_LOST']).toContain(again.body.error.code);
    await eventually(async () => (await api.read('hold/http')).body.held === false, 30_000, 100);
    expect(Date.now()).toBeGreaterThanOrEqual(lastExpiry);
    await api.closeSession(sessionId);
  }, 60_000);

  test('the SDK: withLock’s first renewal, past the limit, loses the handle with HoldLimitReachedError', async () => {
    const client = new LockClient({ baseUrl: server.url });
    const session = await client.openSession({ owner: 'hold-limit-sdk', ttlMillis: 60_000 });
    let grantedAt = 0;
    let reason: unknown;
    try {
      await session.withLock(
        'hold/sdk',
        async (handle) => {
          grantedAt = Date.now();
          await new Promise<void>((resolve) => handle.signal.addEventListener('abort', () => resolve(), { once: true }));
          expect(handle.lost).toBe(true);
          reason = handle.signal.reason;
        },
        { ttlMillis: SDK_TTL_MILLIS }, // first renewed 6 s after the grant, 1 s past the limit
      );
    } finally {
      await session.close();
    }
    expect(reason).toBeInstanceOf(HoldLimitReachedError);
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as HoldLimitReachedError).code).toBe('HOLD_LIMIT_REACHED');
    expect((reason as HoldLimitReachedError).retryable).toBe(false);
    expect(Date.now()).toBeGreaterThanOrEqual(grantedAt + MAX_HOLD_MILLIS);
  }, 60_000);

  test('holdfast lock: CMD is stopped and holdfast exits 4 with HOLD_LIMIT_REACHED', async () => {
    const result = await holdfast(server, ['-o', 'json', 'lock', 'hold/cli', '--ttl', String(SDK_TTL_MILLIS), '--grace', '500', '--', 'sh', '-c', 'while :; do sleep 0.05; done']);
    expect(result.code).toBe(4);
    const error = JSON.parse(result.stderr.trim().split('\n').at(-1)!) as { error: { code: string; message: string } };
    expect(error.error.code).toBe('HOLD_LIMIT_REACHED');
    expect(error.error.message).toContain('hold/cli');
  }, 60_000);
});
