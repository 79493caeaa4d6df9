/**
 * Issue 26 acceptance, `maxHoldMillis` end to end: under a 3 s policy, a lock renewed every second is
 * refused its renewal with 409 HOLD_LIMIT_REACHED once its grant is older than 3 s, and ends at the TTL
 * its last renewal gave it; the SDK's handle reports it lost with that reason; `holdfast lock` exits 4.
 *
 * Needs the core's part of policies (LockServiceOptions.policies, the store-clocked renew refusal):
 * passes once that is merged. Assertions are invariants between the clocks (embedded: the store's
 * clock is this machine's), not timings: a renewal answered 200 was sent before the grant turned 3 s
 * old; the refusal was answered after.
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

const MAX_HOLD_MILLIS = 3_000;
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

describe('a 3 s maxHoldMillis policy', () => {
  test('L5 every second: 200 while the grant is younger than 3 s, then 409 HOLD_LIMIT_REACHED; the grant ends at its last TTL', async () => {
    const api = httpClient(server.url);
    const sessionId = (await api.openSession({ owner: 'hold-limit', ttlMillis: 60_000 })).body.sessionId as string;
    const ttlMillis = 2_000;
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

  test('the SDK: withLock renewing every second loses the handle with HoldLimitReachedError', async () => {
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
        { ttlMillis: 3_000 }, // renewed every second
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
    const result = await holdfast(server, ['-o', 'json', 'lock', 'hold/cli', '--ttl', '3000', '--grace', '500', '--', 'sh', '-c', 'while :; do sleep 0.05; done']);
    expect(result.code).toBe(4);
    const error = JSON.parse(result.stderr.trim().split('\n').at(-1)!) as { error: { code: string; message: string } };
    expect(error.error.code).toBe('HOLD_LIMIT_REACHED');
    expect(error.error.message).toContain('hold/cli');
  }, 60_000);
});
