/**
 * Issue 23 (console): lock values and leaders, against the real server. A lock taken with a value
 * shows on the key page as a holder with its session, owner, token and value; the locks list shows
 * its kind and holders/limit; the leaders view lists it with its term (its fencing token), a
 * proclaim's new value under the same term, and a new leader's higher term. Values are untrusted
 * text: one made of HTML renders as that text (no element, no script), a long one is cut with the
 * whole value one click away. A scoped viewer's leaders view holds its own team's keys only.
 */
import { expect, test, type Page } from '@playwright/test';
import type { LockGrant } from '../../contract/records.js';
import { screenshot, signInWithForm } from './support/console.js';
import { docScreenshot } from './support/doc-screenshots.js';
import { e2e, uniquePrefix } from './support/env.js';
import { LockApi } from './support/lock-api.js';

const api = new LockApi(e2e.serverUrl);

/** L4 with a value (issue 23); the grant must carry the value back. */
async function acquireWithValue(key: string, sessionId: string, value: string): Promise<LockGrant> {
  const answer = await api.call<LockGrant>('POST', `/v1/locks/${encodeURIComponent(key)}/acquire`, { sessionId, ttlMillis: 120_000, value }, { session: sessionId });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.body.value).toBe(value);
  return answer.body;
}

/** L5 with a value: a proclaim (same token, new value). */
async function proclaim(key: string, sessionId: string, fencingToken: string, value: string): Promise<LockGrant> {
  const answer = await api.call<LockGrant>('POST', `/v1/locks/${encodeURIComponent(key)}/renew`, { sessionId, fencingToken, value }, { session: sessionId });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body;
}

function leaderRow(page: Page, key: string) {
  return page.locator(`[data-testid="leader-row"][data-key="${key}"]`);
}

/** Set by the HTML value's handlers if the browser ever ran them. */
async function markupRan(page: Page): Promise<unknown> {
  return page.evaluate(() => (window as unknown as { __valueRan?: unknown }).__valueRan);
}

test('a lock with a value: holder, token and value on the key page, kind and holders/limit in the list, leader and term in the leaders view', async ({ page }) => {
  const prefix = uniquePrefix('leaders');
  const electionKey = `${prefix}election/primary-db`;
  const htmlKey = `${prefix}election/html-value`;
  const longKey = `${prefix}election/long-value`;
  const plainKey = `${prefix}plain-mutex`;
  const address = '10.0.0.7:5432';
  const htmlValue = `<img src=x onerror="window.__valueRan=1"><b>bold</b><script>window.__valueRan=2</script>`;
  const longValue = `postgres://primary.internal:5432/payouts?${'application_name=payout-worker&'.repeat(8)}end`;

  const alpha = await api.openSession('db-leader-alpha');
  const grant = await acquireWithValue(electionKey, alpha, address);
  expect(grant.mode).toBe('exclusive');
  expect(grant.limit).toBe(1);
  const htmlHolder = await api.openSession('html-value-holder');
  const htmlGrant = await acquireWithValue(htmlKey, htmlHolder, htmlValue);
  const longHolder = await api.openSession('long-value-holder');
  await acquireWithValue(longKey, longHolder, longValue);
  const plainHolder = await api.openSession('plain-holder');
  await api.mustAcquire(plainKey, plainHolder);

  const info = (await api.readLock(electionKey)).body;
  expect(info.holders.map((h) => [h.sessionId, h.fencingToken, h.value])).toEqual([[alpha, grant.fencingToken, address]]);

  await signInWithForm(page, e2e.viewerToken);

  // The key page: the holder with its session, owner, token and value.
  await page.goto(`/locks/${encodeURIComponent(electionKey)}`);
  const holder = page.locator(`[data-testid="holder-row"][data-token="${grant.fencingToken}"]`);
  await expect(holder).toHaveAttribute('data-session', alpha);
  await expect(holder).toContainText('db-leader-alpha');
  await expect(holder.getByTestId('detail-token')).toHaveText(grant.fencingToken);
  await expect(holder.getByTestId('holder-value')).toHaveText(address);
  await expect(page.getByTestId('holder-row')).toHaveCount(1);
  await expect(page.getByTestId('detail-kind')).toHaveText('mutex');
  await expect(page.getByTestId('detail-holders')).toHaveText('1/1');
  await screenshot(page, 'lock-detail-value');

  // An HTML value is text: its characters on screen, no element made of it, no handler run.
  await page.goto(`/locks/${encodeURIComponent(htmlKey)}`);
  const htmlRow = page.locator(`[data-testid="holder-row"][data-token="${htmlGrant.fencingToken}"]`);
  const htmlCell = htmlRow.getByTestId('holder-value');
  await expect(htmlCell).toContainText('<img src=x onerror="window.__valueRan=1"><b>bold</b>');
  // Cut in the cell (longer than the preview): the whole value, as text, is in the full view.
  await htmlCell.locator('summary').click();
  await expect(htmlRow.getByTestId('holder-value-full')).toHaveText(htmlValue);
  await expect(htmlRow.locator('img, b, script')).toHaveCount(0);
  expect(await markupRan(page)).toBeUndefined();

  // A long value: cut in the cell, whole one click away.
  await page.goto(`/locks/${encodeURIComponent(longKey)}`);
  const longCell = page.getByTestId('holder-value');
  await expect(longCell).toHaveAttribute('data-cut', 'true');
  await expect(page.getByTestId('holder-value-full')).toBeHidden();
  await longCell.locator('summary').click();
  await expect(page.getByTestId('holder-value-full')).toHaveText(longValue);

  // The locks list: kind and holders/limit.
  await page.goto(`/locks?prefix=${encodeURIComponent(prefix)}`);
  const row = page.locator(`[data-testid="lock-row"][data-key="${electionKey}"]`);
  await expect(row.getByTestId('lock-kind')).toHaveText('mutex');
  await expect(row.getByTestId('lock-holders')).toHaveText('1/1');
  await expect(page.locator(`[data-testid="lock-row"][data-key="${plainKey}"]`).getByTestId('lock-kind')).toHaveText('mutex');

  // The leaders view, reached from the nav: the keys with a value, leader and term; not the plain mutex.
  await page.getByRole('navigation', { name: 'Console sections' }).getByRole('link', { name: 'Leaders' }).click();
  await expect(page.getByRole('heading', { name: 'Leaders' })).toBeVisible();
  await page.getByLabel('Key prefix').fill(prefix);
  const leader = leaderRow(page, electionKey);
  await expect(leader.getByTestId('leader-term')).toHaveText(grant.fencingToken);
  await expect(leader.getByTestId('leader-owner')).toHaveText('db-leader-alpha');
  await expect(leader).toContainText(alpha);
  await expect(leader.getByTestId('holder-value')).toHaveText(address);
  await expect(leaderRow(page, htmlKey).getByTestId('leader-term')).toHaveText(htmlGrant.fencingToken);
  await expect(leaderRow(page, longKey)).toBeVisible();
  await expect(page.getByTestId('leader-row')).toHaveCount(3);
  await expect(leaderRow(page, plainKey)).toHaveCount(0);
  // The HTML value in the leaders table is text too.
  await leaderRow(page, htmlKey).getByTestId('holder-value').locator('summary').click();
  await expect(leaderRow(page, htmlKey).getByTestId('holder-value-full')).toHaveText(htmlValue);
  await expect(leaderRow(page, htmlKey).locator('img, b, script')).toHaveCount(0);
  expect(await markupRan(page)).toBeUndefined();
  await docScreenshot(page, 'leaders');

  // A proclaim changes the value, not the term.
  const moved = '10.0.0.8:5432';
  const proclaimed = await proclaim(electionKey, alpha, grant.fencingToken, moved);
  expect(proclaimed.fencingToken).toBe(grant.fencingToken);
  await expect(leader.getByTestId('holder-value')).toHaveText(moved);
  await expect(leader.getByTestId('leader-term')).toHaveText(grant.fencingToken);

  // The leader resigns and another takes over: a new leader, a higher term.
  await api.release(electionKey, alpha, grant.fencingToken);
  const beta = await api.openSession('db-leader-beta');
  const next = await acquireWithValue(electionKey, beta, '10.0.0.9:5432');
  expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(grant.fencingToken));
  await expect(leader.getByTestId('leader-owner')).toHaveText('db-leader-beta');
  await expect(leader.getByTestId('leader-term')).toHaveText(next.fencingToken);
  await expect(leader.getByTestId('holder-value')).toHaveText('10.0.0.9:5432');

  for (const session of [alpha, beta, htmlHolder, longHolder, plainHolder]) await api.closeSession(session);
});

test("a scoped viewer's leaders view holds its own team's leaders only", async ({ page }) => {
  const run = Date.now().toString(36);
  const inKey = `${e2e.scopedPrefix}leaders-${run}/election`;
  const outKey = `e2e-team-b/leaders-${run}/election`;
  const inside = await api.openSession(`leader-in-${run}`);
  const outside = await api.openSession(`leader-out-${run}`);
  const inGrant = await acquireWithValue(inKey, inside, `in-${run}`);
  await acquireWithValue(outKey, outside, `out-${run}`);

  await signInWithForm(page, e2e.scopedViewerToken);
  await page.goto('/leaders');
  await expect(leaderRow(page, inKey).getByTestId('leader-term')).toHaveText(inGrant.fencingToken);
  await expect(page.getByText(`leader-out-${run}`)).toHaveCount(0);
  const answer = await page.request.get('/api/leaders?limit=500');
  expect(answer.status()).toBe(200);
  const text = await answer.text();
  expect(text).toContain(inKey);
  expect(text).not.toContain(outKey);
  expect(text).not.toContain(`out-${run}`);

  await api.closeSession(inside);
  await api.closeSession(outside);
});
