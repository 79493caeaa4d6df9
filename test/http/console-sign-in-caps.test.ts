/**
 * Attacker's review of issue 25 (rev-sec): K1's cap of pending codes per token (8) and K3's of
 * console sessions per token (100) are read-then-write (list, drop the oldest, put), so mints sent
 * together all see room and all put. The invariant checked: once concurrent mints by one token have
 * all answered, at most `maxCodesPerIssuer` of their codes still redeem.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { CONSOLE_SIGN_IN } from '../../lock/http/console-sign-in.js';
import { startServer, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server?.stop();
});

const post = (path: string, body: unknown, token?: string) =>
  fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });

test('concurrent K1 mints by one token leave at most maxCodesPerIssuer codes that redeem', async () => {
  const minted = await Promise.all(
    Array.from({ length: 4 * CONSOLE_SIGN_IN.maxCodesPerIssuer }, async () => {
      const answer = await post('/v1/console/codes', { sealedToken: 'opaque' }, server.viewerToken);
      expect(answer.status).toBe(201);
      return ((await answer.json()) as { code: string }).code;
    }),
  );
  let redeemed = 0;
  for (const code of minted) {
    const answer = await post('/v1/console/codes/redeem', { code });
    if (answer.status === 200) redeemed += 1;
  }
  expect(redeemed).toBeLessThanOrEqual(CONSOLE_SIGN_IN.maxCodesPerIssuer);
}, 120_000);
