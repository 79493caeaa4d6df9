/**
 * Issue 10, item 9 (console): the sign-in link carries a one-time code, never the
 * operator token; the code works once, for one browser; the session cookie is
 * sealed (the token is not readable in it) and signing out makes it useless even
 * to someone who copied it. Also: a lock holder's sessionToken never reaches the
 * console's pages or API answers.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, test } from '@playwright/test';
import { mintSignInPath, screenshot, signInWithForm } from './support/console.js';
import { e2e, uniquePrefix } from './support/env.js';
import { LockApi } from './support/lock-api.js';

const run = promisify(execFile);

test('a sign-in link works once: the same link in another browser signs nobody in', async ({ page, browser }) => {
  const minted = await mintSignInPath(e2e.consoleUrl, e2e.operatorToken);
  expect(minted.status).toBe(201);
  expect(minted.path).toMatch(/^\/signin\?code=[A-Za-z0-9_-]{32}$/);
  expect(JSON.stringify(minted.body)).not.toContain(e2e.operatorToken);

  await page.goto(minted.path!);
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
  await expect(page.getByTestId('whoami-name')).toHaveText(e2e.operatorName);

  const other = await browser.newContext();
  try {
    const replay = await other.newPage();
    await replay.goto(minted.path!);
    await expect(replay.getByTestId('signin-error')).toContainText('already used or has expired');
    expect(replay.url()).not.toContain('code=');
    await screenshot(replay, 'signin-link-used');
    await replay.goto('/');
    await expect(replay).toHaveURL(/\/signin$/);
    expect((await other.request.get('/api/me')).status()).toBe(401);
  } finally {
    await other.close();
  }
});

test('minting a code needs a token the lock server accepts; a viewer’s code signs in as the viewer', async ({ page }) => {
  expect((await mintSignInPath(e2e.consoleUrl, undefined)).status).toBe(401);
  const wrong = await mintSignInPath(e2e.consoleUrl, 'op-not-a-real-token-0000000000');
  expect(wrong.status).toBe(401);
  expect(wrong.path).toBeUndefined();

  const viewer = await mintSignInPath(e2e.consoleUrl, e2e.viewerToken);
  expect(viewer.status).toBe(201);
  await page.goto(viewer.path!);
  await expect(page.getByTestId('whoami-role')).toHaveText('viewer');
  await expect(page.getByTestId('whoami-name')).toHaveText(e2e.viewerName);
});

test('an old-style link with a token in it is not used and leaves the address bar at once', async ({ page }) => {
  await page.goto(`/signin?token=${encodeURIComponent(e2e.operatorToken)}`);
  await expect(page.getByTestId('signin-error')).toContainText('no longer carry tokens');
  expect(page.url()).not.toContain(e2e.operatorToken);
  expect((await page.request.get('/api/me')).status()).toBe(401);
});

test('the link `npm start` prints (scripts/signin-link.sh) carries a code, not the token, and signs in as the operator', async ({ page }) => {
  const { stdout, stderr } = await run('bash', ['scripts/signin-link.sh'], {
    env: { ...process.env, PORT: new URL(e2e.consoleUrl).port, HOLDFAST_ADMIN_TOKENS_FILE: e2e.tokensFile },
  });
  const link = stdout.trim();
  expect(link).toMatch(new RegExp(`^${e2e.consoleUrl}/signin\\?code=[A-Za-z0-9_-]{32}$`));
  expect(stdout + stderr).not.toContain(e2e.operatorToken);
  await page.goto(link);
  await expect(page.getByTestId('whoami-name')).toHaveText(e2e.operatorName);
  await expect(page.getByTestId('whoami-role')).toHaveText('operator');
});

test('the session cookie is sealed, and after sign-out a copy of it is useless', async ({ page, browser, context }) => {
  await signInWithForm(page, e2e.operatorToken);
  const cookie = (await context.cookies()).find((c) => c.name === 'holdfast_console');
  expect(cookie).toBeDefined();
  expect(cookie!.httpOnly).toBe(true);
  expect(cookie!.sameSite).toBe('Strict');
  for (const readable of [e2e.operatorToken, Buffer.from(e2e.operatorToken).toString('base64url'), Buffer.from(e2e.operatorToken).toString('base64')]) {
    expect(decodeURIComponent(cookie!.value)).not.toContain(readable);
  }

  // A copy works while the session lives...
  const thief = await browser.newContext();
  try {
    await thief.addCookies([cookie!]);
    expect((await thief.request.get('/api/me')).status()).toBe(200);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect(page.getByText('You are signed out.')).toBeVisible();

    // ...and is refused everywhere once the owner signed out.
    expect((await thief.request.get('/api/me')).status()).toBe(401);
    expect((await thief.request.get('/api/locks')).status()).toBe(401);
    const stolen = await thief.newPage();
    await stolen.goto('/locks');
    await expect(stolen).toHaveURL(/\/signin$/);
  } finally {
    await thief.close();
  }
});

test('a lock holder’s sessionToken never appears in the console’s pages or API answers', async ({ page }) => {
  const api = new LockApi(e2e.serverUrl);
  const prefix = uniquePrefix('token-leak');
  const key = `${prefix}payout`;
  const sessionId = await api.openSession('token-leak-holder');
  const sessionToken = api.sessionTokenOf(sessionId);
  expect(sessionToken, 'L1 returns a sessionToken').toBeTruthy();
  expect(sessionToken!.length).toBeGreaterThanOrEqual(22); // ≥ 128 bits, base64url or hex
  await api.mustAcquire(key, sessionId);

  const bodies: string[] = [];
  page.on('response', (response) => {
    bodies.push(`${response.url()}\n`);
    void response.text().then((text) => bodies.push(text), () => undefined);
  });
  await signInWithForm(page, e2e.operatorToken);
  for (const path of ['/', `/locks?prefix=${encodeURIComponent(prefix)}`, `/locks/${encodeURIComponent(key)}`, '/sessions', '/audit']) {
    await page.goto(path);
    await page.waitForLoadState('networkidle');
    bodies.push(await page.content());
  }
  for (const route of ['/api/locks', `/api/locks/${encodeURIComponent(key)}`, '/api/sessions', '/api/summary', '/api/me']) {
    bodies.push(await (await page.request.get(route)).text());
  }
  const everything = bodies.join('\n');
  expect(everything).toContain(sessionId); // the pages did show this session...
  expect(everything).not.toContain(sessionToken!); // ...but never its token
  await api.closeSession(sessionId);
});
