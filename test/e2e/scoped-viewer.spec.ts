/**
 * Issue 26: a viewer whose token is scoped to one team's prefix (`e2e-team-a/`, playwright.config.ts)
 * signs in to the console. Another team holds, contends and waits on its own keys at the same time.
 * Every console page the viewer opens — overview, locks, a key of its own, sessions, waits,
 * contention, audit — shows its own team's locks, and neither the page (its DOM, with the data
 * Next.js inlines) nor any answer the console sent the browser names the other team's key, owner or
 * session. The console hides nothing itself: the server answers a scoped token only what is in scope.
 */
import { expect, test, type Page, type Response } from '@playwright/test';
import { signInWithForm } from './support/console.js';
import { e2e } from './support/env.js';
import { LockApi } from './support/lock-api.js';

const api = new LockApi(e2e.serverUrl);
const viewer = new LockApi(e2e.serverUrl, e2e.viewerToken);

/**
 * An acquire waiting on the server for as long as the spec runs: each wait lasts up to 30 s (409 at its end, asked
 * again); it ends when its session is closed (404). Waits are what the waits page shows, so they must not lapse
 * on a slow machine before the page is read.
 */
async function keepWaiting(key: string, sessionId: string): Promise<void> {
  for (;;) {
    const response = await fetch(`${e2e.serverUrl}/v1/locks/${encodeURIComponent(key)}/acquire`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${api.sessionTokenOf(sessionId)}` },
      body: JSON.stringify({ sessionId, waitMillis: 30_000 }),
    });
    await response.text();
    if (response.status !== 409) return;
  }
}

/** Every text answer the console sends this page (HTML, RSC payloads, its /api JSON), for the search below. */
function recordAnswers(page: Page): Promise<string>[] {
  const bodies: Promise<string>[] = [];
  page.on('response', (response: Response) => {
    if (!response.url().startsWith(e2e.consoleUrl)) return;
    const type = response.headers()['content-type'] ?? '';
    if (!/json|html|text|x-component/.test(type)) return;
    bodies.push(response.text().catch(() => ''));
  });
  return bodies;
}

test('a scoped viewer’s console pages name no key, owner or session of another team', async ({ page }) => {
  test.setTimeout(120_000);
  const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const inKeys = [`${e2e.scopedPrefix}${run}/job-1`, `${e2e.scopedPrefix}${run}/report`];
  const outKey = `e2e-team-b-${run}/payouts`;

  const holderIn = await api.openSession(`owner-in-${run}`, 120_000);
  for (const key of inKeys) await api.mustAcquire(key, holderIn);
  const holderOut = await api.openSession(`owner-out-${run}`, 120_000);
  await api.mustAcquire(outKey, holderOut);
  const contenderIn = await api.openSession(`owner-in-contender-${run}`, 120_000);
  const contenderOut = await api.openSession(`owner-out-contender-${run}`, 120_000);
  for (let i = 0; i < 2; i++) expect((await api.acquire(inKeys[0]!, contenderIn)).status).toBe(409);
  for (let i = 0; i < 3; i++) expect((await api.acquire(outKey, contenderOut)).status).toBe(409);
  const waiterIn = await api.openSession(`owner-in-waiter-${run}`, 120_000);
  const waiterOut = await api.openSession(`owner-out-waiter-${run}`, 120_000);
  const waits = [keepWaiting(inKeys[0]!, waiterIn), keepWaiting(outKey, waiterOut)];
  const marks = [`team-b-${run}`, `owner-out-${run}`, holderOut, contenderOut, waiterOut];

  try {
    // The other team's lock and wait are there for an unscoped viewer: the search below is not vacuous.
    expect(JSON.stringify((await viewer.call('GET', `/v1/admin/locks?prefix=${encodeURIComponent(`e2e-team-b-${run}`)}`, undefined, true)).body)).toContain(outKey);
    await expect
      .poll(async () => JSON.stringify((await viewer.call('GET', '/v1/admin/waits', undefined, true)).body))
      .toContain(waiterOut);

    const answers = recordAnswers(page);
    await signInWithForm(page, e2e.scopedViewerToken);
    await expect(page.getByTestId('whoami-role')).toHaveText('viewer');

    const pages: { path: string; shows: (page: Page) => Promise<void> }[] = [
      { path: '/', shows: async (p) => expect(p.getByTestId('whoami-name')).toHaveText('e2e-team-a-viewer') },
      { path: '/locks', shows: async (p) => expect(p.locator(`[data-testid="lock-row"][data-key="${inKeys[0]}"]`)).toBeVisible() },
      { path: `/locks/${encodeURIComponent(inKeys[0]!)}`, shows: async (p) => expect(p.getByTestId('lock-detail')).toContainText(`owner-in-${run}`) },
      { path: '/sessions', shows: async (p) => expect(p.locator(`[data-testid="session-row"][data-session="${holderIn}"]`)).toBeVisible() },
      { path: '/waits', shows: async (p) => expect(p.getByTestId('wait-row').filter({ hasText: waiterIn })).toBeVisible() },
      { path: '/contention', shows: async (p) => expect(p.locator(`[data-testid="contention-row"][data-key="${inKeys[0]}"]`)).toBeVisible() },
      { path: '/audit', shows: async (p) => expect(p.getByRole('heading', { level: 1 })).toBeVisible() },
    ];
    for (const { path, shows } of pages) {
      await page.goto(path);
      await shows(page);
      const html = await page.content();
      for (const mark of marks) expect(html.includes(mark), `${path} names ${mark}`).toBe(false);
    }
    for (const body of await Promise.all(answers)) {
      for (const mark of marks) expect(body.includes(mark), `an answer names ${mark}: ${body.slice(0, 300)}`).toBe(false);
    }
  } finally {
    // Ending the waiters' sessions ends their waits.
    for (const sessionId of [waiterIn, waiterOut, contenderIn, contenderOut, holderIn, holderOut]) await api.closeSession(sessionId);
    await Promise.all(waits);
  }
});
