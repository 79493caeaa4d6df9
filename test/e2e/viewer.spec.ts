/**
 * Acceptance 5: a viewer sees the locks but the revoke and kill actions are
 * disabled, and a crafted request to the console's revoke route with a viewer
 * cookie is refused (403) and audited as nothing. Also: the revoke route
 * refuses cross-origin and CSRF-less requests even from an operator.
 */
import { expect, test } from '@playwright/test';
import { screenshot, signInWithForm } from './support/console.js';
import { e2e, uniquePrefix } from './support/env.js';
import { LockApi } from './support/lock-api.js';

const api = new LockApi(e2e.serverUrl);
const admin = new LockApi(e2e.serverUrl, e2e.operatorToken);

test('a viewer sees locks and sessions with every admin action disabled; a crafted revoke is 403 and audits nothing', async ({ page }) => {
  const prefix = uniquePrefix('viewer');
  const key = `${prefix}payout-1`;
  const sessionId = await api.openSession('viewer-test-holder');
  const grant = await api.mustAcquire(key, sessionId);

  await signInWithForm(page, e2e.viewerToken);
  await expect(page.getByTestId('whoami-role')).toHaveText('viewer');
  await page.goto(`/locks?prefix=${encodeURIComponent(prefix)}`);
  const row = page.locator(`[data-testid="lock-row"][data-key="${key}"]`);
  await expect(row.getByTestId('lock-token')).toHaveText(grant.fencingToken);
  await expect(row.getByRole('button', { name: `Revoke ${key}` })).toBeDisabled();
  await screenshot(page, 'locks-viewer');

  await page.goto('/sessions');
  const sessionRow = page.locator(`[data-testid="session-row"][data-session="${sessionId}"]`);
  await expect(sessionRow).toBeVisible();
  await expect(sessionRow.getByRole('button', { name: `Kill session ${sessionId}` })).toBeDisabled();
  await screenshot(page, 'sessions-viewer');

  await page.goto(`/locks/${encodeURIComponent(key)}`);
  await expect(page.getByRole('button', { name: 'Force-revoke…' })).toBeDisabled();

  // A crafted request with the viewer's cookie, a valid CSRF token and the right Origin.
  const auditBefore = (await admin.audit()).body.items.length;
  const me = (await (await page.request.get('/api/me')).json()) as { role: string; csrfToken: string };
  expect(me.role).toBe('viewer');
  const crafted = await page.request.post(`/api/locks/${encodeURIComponent(key)}/revoke`, {
    headers: { origin: e2e.consoleUrl, 'x-csrf-token': me.csrfToken },
    data: { reason: 'crafted by a viewer', expectedFencingToken: grant.fencingToken, confirmKey: key },
  });
  expect(crafted.status()).toBe(403);
  expect(((await crafted.json()) as { error: { code: string } }).error.code).toBe('FORBIDDEN');
  const kill = await page.request.post(`/api/sessions/${encodeURIComponent(sessionId)}/kill`, {
    headers: { origin: e2e.consoleUrl, 'x-csrf-token': me.csrfToken },
    data: { reason: 'crafted by a viewer', confirmId: sessionId },
  });
  expect(kill.status()).toBe(403);

  expect((await admin.audit()).body.items.length).toBe(auditBefore);
  expect((await api.readLock(key)).body.fencingToken).toBe(grant.fencingToken);
  await api.closeSession(sessionId);
});

test('the revoke route refuses an operator request without the CSRF token or from another origin', async ({ page }) => {
  const prefix = uniquePrefix('csrf');
  const key = `${prefix}payout-1`;
  const sessionId = await api.openSession('csrf-test-holder');
  const grant = await api.mustAcquire(key, sessionId);
  await signInWithForm(page, e2e.operatorToken);
  const me = (await (await page.request.get('/api/me')).json()) as { csrfToken: string };
  const body = { reason: 'csrf probe', expectedFencingToken: grant.fencingToken, confirmKey: key };

  const noToken = await page.request.post(`/api/locks/${encodeURIComponent(key)}/revoke`, { headers: { origin: e2e.consoleUrl }, data: body });
  expect(noToken.status()).toBe(403);
  const foreign = await page.request.post(`/api/locks/${encodeURIComponent(key)}/revoke`, {
    headers: { origin: 'http://evil.example', 'x-csrf-token': me.csrfToken },
    data: body,
  });
  expect(foreign.status()).toBe(403);
  expect((await api.readLock(key)).body.held).toBe(true);

  // The httpOnly cookie is invisible to page scripts.
  expect(await page.evaluate(() => document.cookie)).not.toContain(e2e.operatorToken);
  const cookies = await page.context().cookies();
  const session = cookies.find((c) => c.name === 'holdfast_console');
  expect(session?.httpOnly).toBe(true);
  expect(session?.sameSite).toBe('Strict');
  await api.closeSession(sessionId);
});
