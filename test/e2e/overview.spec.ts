/**
 * Acceptance 1: sign in as operator; the overview shows non-zero live figures
 * while a test client acquires locks, and a chart updates without a reload.
 */
import { expect, test } from '@playwright/test';
import { screenshot, signInWithForm, signInWithLink } from './support/console.js';
import { e2e, uniquePrefix } from './support/env.js';
import { LockApi } from './support/lock-api.js';

test('sign in through the printed link, see who is signed in, sign out', async ({ page }) => {
  const link = await signInWithLink(page, e2e.operatorToken, e2e.consoleUrl);
  // The link never carried the token, and its one-time code is gone from the address bar once used.
  expect(link).not.toContain(e2e.operatorToken);
  expect(page.url()).not.toContain('code=');
  await expect(page.getByTestId('whoami-name')).toHaveText(e2e.operatorName);
  await expect(page.getByTestId('whoami-role')).toHaveText('operator');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByText('You are signed out.')).toBeVisible();
  await page.goto('/locks');
  await expect(page).toHaveURL(/\/signin$/);
  await screenshot(page, 'signin');
});

test('a wrong token is refused with a plain message and signs nobody in', async ({ page }) => {
  await page.goto('/signin');
  await page.getByLabel('Admin token').fill('not-a-real-token-at-all');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('signin-error')).toContainText('does not accept this token');
  await page.goto('/');
  await expect(page).toHaveURL(/\/signin$/);
});

/**
 * The console polls every 2 s: a figure is right one poll (plus a request and a render) after it changed. Waits
 * for it allow ≥ 10× that; they only bound a failure.
 */
const WITHIN_POLLS = { timeout: 40_000 };

test('overview shows live non-zero figures and a chart that grows without a reload', async ({ page }) => {
  // The overview's own polls (A5 through the console), counted as they go out and land.
  const summaryPolls = { sent: 0, inFlight: 0 };
  const isSummaryPoll = (url: string) => new URL(url).pathname === '/api/summary';
  page.on('request', (request) => {
    if (!isSummaryPoll(request.url())) return;
    summaryPolls.sent += 1;
    summaryPolls.inFlight += 1;
  });
  const landed = (request: { url(): string }) => {
    if (isSummaryPoll(request.url())) summaryPolls.inFlight -= 1;
  };
  page.on('requestfinished', landed);
  page.on('requestfailed', landed);
  const api = new LockApi(e2e.serverUrl);
  const prefix = uniquePrefix('overview');
  const sessionId = await api.openSession('overview-test-client');
  const held: { key: string; token: string }[] = [];
  for (let i = 0; i < 3; i += 1) {
    const grant = await api.mustAcquire(`${prefix}held-${i}`, sessionId);
    held.push({ key: grant.key, token: grant.fencingToken });
  }
  // Keep acquiring and releasing in the background so the rates are live; bounded in count.
  let stop = false;
  const churn = (async () => {
    for (let i = 0; i < 400 && !stop; i += 1) {
      const grant = await api.acquire(`${prefix}churn`, sessionId, 5_000);
      if (grant.status === 200) await api.release(grant.body.key, sessionId, grant.body.fencingToken);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  try {
    await signInWithForm(page, e2e.operatorToken);
    const heldValue = page.getByTestId('fig-held-value');
    await expect.poll(async () => Number(await heldValue.textContent()), WITHIN_POLLS).toBeGreaterThanOrEqual(3);
    await expect.poll(async () => page.getByTestId('fig-acquire-value').textContent(), WITHIN_POLLS).not.toMatch(/^(0\/s|—)$/);
    await expect(page.getByTestId('fig-sessions-value')).not.toHaveText('0', WITHIN_POLLS);
    await expect(page.getByTestId('updated-ago')).toContainText(/updated \d+ s ago/);

    const chart = page.getByTestId('chart-held');
    const points = async () => Number(await chart.getAttribute('data-points'));
    await expect.poll(points, WITHIN_POLLS).toBeGreaterThanOrEqual(2);
    const before = await points();
    const url = page.url();
    await expect.poll(points, WITHIN_POLLS).toBeGreaterThan(before);
    // A flat line has a zero-height box, which Playwright calls hidden: check the drawn path instead.
    const line = chart.locator('svg .recharts-line path.recharts-curve').first();
    await expect(line).toHaveAttribute('d', /^M[^L]+L/);
    expect(page.url()).toBe(url);

    // A new held lock shows up in the figure without a reload.
    const beforeHeld = Number(await heldValue.textContent());
    await api.mustAcquire(`${prefix}held-extra`, sessionId);
    await expect.poll(async () => Number(await heldValue.textContent()), WITHIN_POLLS).toBeGreaterThan(beforeHeld - 1);

    // Pause stops polling: no poll goes out while paused, and the points stop growing. A poll already in flight
    // at the click still lands (and adds its point): on a slow machine one often is, so it is waited for, and its
    // render (event-loop turns and two frames, not a clock), before the count is taken.
    await page.getByRole('button', { name: 'Pause' }).click();
    await expect(page.getByTestId('updated-ago')).toContainText('paused');
    await expect.poll(() => summaryPolls.inFlight, WITHIN_POLLS).toBe(0);
    await page.evaluate(async () => {
      const turn = () => new Promise((resolve) => setTimeout(resolve, 0));
      const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
      await turn();
      await frame();
      await frame();
      await turn();
    });
    const sentWhenPaused = summaryPolls.sent;
    const paused = await points();
    await page.waitForTimeout(4_500); // observing that nothing happens needs a wall-clock wait (two polls' worth)
    expect(summaryPolls.sent).toBe(sentWhenPaused);
    expect(await points()).toBe(paused);
    await page.getByRole('button', { name: 'Resume' }).click();
    await expect.poll(points, WITHIN_POLLS).toBeGreaterThan(paused);
    await screenshot(page, 'overview');

    await page.setViewportSize({ width: 390, height: 844 });
    await expect(page.getByTestId('fig-held')).toBeVisible();
    await screenshot(page, 'overview-narrow');
  } finally {
    stop = true;
    await churn;
    await api.closeSession(sessionId);
  }
});
