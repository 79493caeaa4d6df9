/**
 * Attacker's review of issue 25 (rev-sec): what a sign-in code carries must be a seal the console
 * made *for a code*. K1 keeps whatever `sealedToken` its caller sends (the lock server cannot open
 * it), so a viewer-token holder could send K1 any other seal of the console's secret — the session
 * cookie is one, `{sid, token, name, role}` sealed with the same password — and get back a code
 * that, redeemed at the console, signs in as the cookie's token. A copy of an operator's cookie
 * would then outlive its sign-out (K5) as a fresh operator session, through a viewer's code.
 * Pinned: a code minted with a non-code seal redeems to nothing; a code the console minted works.
 */
import { sealData } from 'iron-session';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { processState } from '../../app/lib/server/process-state.js';
import { mintSignInCode, redeemSignInCode } from '../../app/lib/server/signin-codes.js';
import { startServer, type TestServer } from '../support/server.js';

describe('a sign-in code opens only a seal made for a code', () => {
  let server: TestServer;
  const before = process.env.HOLDFAST_URL;

  beforeAll(async () => {
    server = await startServer();
    process.env.HOLDFAST_URL = server.url;
  });
  afterAll(async () => {
    if (before === undefined) delete process.env.HOLDFAST_URL;
    else process.env.HOLDFAST_URL = before;
    await server?.stop();
  });

  test("a viewer's code carrying an operator's session cookie does not sign in as the operator", async () => {
    // What the console's cookie holds (auth.ts writeSession), sealed as iron-session seals it.
    const operatorCookie = await sealData(
      { sid: 'a'.repeat(32), token: server.operatorToken, name: 'test-operator', role: 'operator' },
      { password: processState().secret, ttl: 12 * 60 * 60 },
    );
    const minted = await fetch(`${server.url}/v1/console/codes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.viewerToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sealedToken: operatorCookie }),
    });
    expect(minted.status).toBe(201);
    const { code } = (await minted.json()) as { code: string };
    const redemption = await redeemSignInCode(code);
    expect(redemption.ok && redemption.signIn.token === server.operatorToken).toBe(false);
    expect(redemption.ok).toBe(false);
  });

  test('a code the console minted signs in as the token it was minted for', async () => {
    const minted = await mintSignInCode(server.viewerToken);
    expect(minted.ok).toBe(true);
    const redemption = await redeemSignInCode(minted.ok ? minted.body.code : '');
    expect(redemption).toEqual({ ok: true, signIn: { token: server.viewerToken, name: 'test-viewer', role: 'viewer' } });
  });
});
