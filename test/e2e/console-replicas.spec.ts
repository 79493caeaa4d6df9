/**
 * Issue 25, "console replicas" (SPEC v3 "operating it without downtime"): two console processes
 * (`next start` of the production build, sharing HOLDFAST_CONSOLE_SECRET_FILE) behind one test
 * proxy that alternates every request between them, on the run's real lock server (playwright.config.ts).
 * - Sign in once (a one-time link minted through the proxy), then act through both replicas: an
 *   admin read (A1 through /api/locks) and an admin action (a force-revoke) answered by each.
 * - Restart one console process: still signed in, through both.
 * - Sign out: the cookie, and a copy of it taken before, is refused by both replicas at once.
 */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, test, type APIRequestContext } from '@playwright/test';
import { PIN_HEADER, startAlternatingProxy, type AlternatingProxy } from './support/alternating-proxy.js';
import { screenshot } from './support/console.js';
import { e2e, uniquePrefix } from './support/env.js';
import { LockApi } from './support/lock-api.js';
import { freePort, startConsole, waitForUrl, type Proc } from './support/processes.js';

test.describe.configure({ mode: 'serial' });

let serverUrl: string;
let consoleUrls: string[];
let consoles: Proc[];
let proxy: AlternatingProxy;
let secretFile: string;

const startReplica = (index: number) =>
  startConsole({ port: Number(new URL(consoleUrls[index]!).port), holdfastUrl: serverUrl, env: { HOLDFAST_CONSOLE_SECRET_FILE: secretFile } });

test.beforeAll(async () => {
  test.setTimeout(180_000); // two `next start`s at once on a busy machine; only bounds a failure
  const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-e2e-replicas-'));
  secretFile = path.join(dir, 'console-secret');
  writeFileSync(secretFile, `${randomBytes(32).toString('hex')}\n`);
  chmodSync(secretFile, 0o600);
  serverUrl = e2e.serverUrl;
  consoleUrls = [`http://127.0.0.1:${await freePort()}`, `http://127.0.0.1:${await freePort()}`];
  consoles = [startReplica(0), startReplica(1)];
  await Promise.all(consoles.map((proc, i) => waitForUrl(`${consoleUrls[i]}/signin`, proc)));
  proxy = await startAlternatingProxy(consoleUrls);
});

test.afterAll(async () => {
  await proxy?.stop();
  for (const proc of consoles ?? []) await proc.stop();
});

/** Each replica answers this request with `status`: the call is sent once pinned to each (the page open beside it polls through the proxy's turns). */
async function throughBoth(request: APIRequestContext, call: (r: APIRequestContext, headers: Record<string, string>) => Promise<{ status(): number }>, status: number) {
  const before = proxy.served.length;
  for (const upstream of [0, 1]) expect((await call(request, { [PIN_HEADER]: String(upstream) })).status()).toBe(status);
  const answered = proxy.served.slice(before).filter((s) => s.pinned && s.status === status);
  expect(new Set(answered.map((s) => s.upstream))).toEqual(new Set([0, 1]));
}

test('sign in once through the proxy; act through both replicas; restart one: still signed in; sign out: refused by both', async ({ browser }) => {
  test.setTimeout(240_000); // restarts a `next start` mid-test; only bounds a failure
  const lockApi = new LockApi(serverUrl, e2e.operatorToken);
  const prefix = uniquePrefix('replicas');
  const holder = await lockApi.openSession('replica-worker');
  const grants = [await lockApi.mustAcquire(`${prefix}a`, holder), await lockApi.mustAcquire(`${prefix}b`, holder)];

  const context = await browser.newContext({ baseURL: proxy.url });
  try {
    const page = await context.newPage();
    // Minted through the proxy (one replica), redeemed through it (whichever is next): codes are the lock server's.
    const minted = await fetch(`${proxy.url}/api/auth/codes`, { method: 'POST', headers: { authorization: `Bearer ${e2e.operatorToken}` } });
    expect(minted.status).toBe(201);
    const { path: signInPath } = (await minted.json()) as { path: string };
    await page.goto(signInPath);
    await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
    await expect(page.getByTestId('whoami-name')).toHaveText(e2e.operatorName);

    // An admin read, answered by each replica.
    await throughBoth(context.request, (r, headers) => r.get(`/api/locks?prefix=${encodeURIComponent(prefix)}`, { headers }), 200);
    const me = (await (await context.request.get('/api/me')).json()) as { csrfToken: string };

    // An admin action through each replica: a force-revoke (the CSRF token is the same on both: one secret).
    const before = proxy.served.length;
    for (const [upstream, grant] of grants.entries()) {
      const revoked = await context.request.post(`/api/locks/${encodeURIComponent(grant.key)}/revoke`, {
        headers: { origin: proxy.url, 'x-csrf-token': me.csrfToken, [PIN_HEADER]: String(upstream) },
        data: { reason: 'replica test', confirmKey: grant.key, expectedFencingToken: grant.fencingToken },
      });
      expect(revoked.status(), await revoked.text()).toBe(200);
      expect(((await revoked.json()) as { outcome: string }).outcome).toBe('REVOKED');
    }
    const revokes = proxy.served.slice(before).filter((s) => s.pinned && s.path.includes('/revoke') && s.status === 200);
    expect(new Set(revokes.map((s) => s.upstream))).toEqual(new Set([0, 1]));
    expect((await lockApi.call('GET', `/v1/locks/${encodeURIComponent(grants[0]!.key)}`)).body).toMatchObject({ held: false });

    // Restart replica 0: the sessions are the lock server's, the secret is the file's.
    await consoles[0]!.stop();
    consoles[0] = startReplica(0);
    await waitForUrl(`${consoleUrls[0]}/signin`, consoles[0]);
    await throughBoth(context.request, (r, headers) => r.get('/api/me', { headers }), 200);
    await page.goto('/locks');
    await expect(page.getByTestId('whoami-name')).toHaveText(e2e.operatorName);
    await screenshot(page, 'console-replicas-after-restart');

    // A copy of the cookie, taken while signed in.
    const copied = await context.storageState();

    // Sign out through one replica; both refuse the cookie at once, and the copy too.
    expect((await context.request.delete('/api/auth', { headers: { origin: proxy.url } })).status()).toBe(204);
    await throughBoth(context.request, (r, headers) => r.get('/api/me', { headers }), 401);
    const thief = await browser.newContext({ baseURL: proxy.url, storageState: copied });
    try {
      await throughBoth(thief.request, (r, headers) => r.get('/api/me', { headers }), 401);
      await throughBoth(thief.request, (r, headers) => r.get(`/api/locks?prefix=${encodeURIComponent(prefix)}`, { headers }), 401);
      // Each replica directly, too (no proxy in between).
      for (const url of consoleUrls) {
        const direct = await browser.newContext({ baseURL: url, storageState: copied });
        try {
          expect((await direct.request.get('/api/me')).status()).toBe(401);
        } finally {
          await direct.close();
        }
      }
    } finally {
      await thief.close();
    }
  } finally {
    await context.close();
  }
});
