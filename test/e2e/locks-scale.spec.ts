/**
 * Acceptance 2 and 7: a lock acquired by a test client appears within one
 * refresh interval with its real token; prefix search finds it among 5,000
 * others; pagination reaches the last page; with 10,000 held locks the first
 * page shows quickly, and no request fetches everything.
 */
import { expect, test, type Page, type Response } from '@playwright/test';
import { screenshot, signInWithForm } from './support/console.js';
import { holdManyLocks, type BulkLocks } from './support/bulk.js';
import { e2e, uniquePrefix } from './support/env.js';
import { LockApi } from './support/lock-api.js';

/** app/components/live.tsx REFRESH_INTERVAL_MILLIS */
const REFRESH_INTERVAL_MILLIS = 2_000;
const MAX_PAGE_SIZE = 500;

test.describe.configure({ mode: 'serial' });

const api = new LockApi(e2e.serverUrl);
const bulkPrefix = uniquePrefix('bulk');
const batches: BulkLocks[] = [];

test.afterAll(async () => {
  for (const batch of batches) await batch.release();
});

interface SeenLocksResponse {
  url: URL;
  bytes: number;
  items: number;
}

/** Every /api/locks answer the page receives, with its size, to prove no request fetches everything. */
function recordLockRequests(page: Page): SeenLocksResponse[] {
  const seen: SeenLocksResponse[] = [];
  page.on('response', async (response: Response) => {
    const url = new URL(response.url());
    if (url.pathname !== '/api/locks' || response.status() !== 200) return;
    let body: Buffer;
    try {
      body = await response.body();
    } catch {
      return; // the page navigated away and the browser dropped this body
    }
    const parsed = JSON.parse(body.toString('utf8')) as { items: unknown[] };
    seen.push({ url, bytes: body.length, items: parsed.items.length });
  });
  return seen;
}

test('a new lock appears by itself at a refresh, prefix search finds it among 5,000, pagination reaches the last page', async ({ page }) => {
  test.setTimeout(300_000);
  const batch = await holdManyLocks(api, bulkPrefix, 5_000, { sessions: 50, concurrency: 16 });
  batches.push(batch);
  console.log(`[figure] created 5,000 held locks over HTTP in ${(batch.millis / 1000).toFixed(1)} s`);

  await signInWithForm(page, e2e.operatorToken);
  const seen = recordLockRequests(page);
  const needlePrefix = `${bulkPrefix}zz-needle`;
  await page.goto(`/locks?prefix=${encodeURIComponent(needlePrefix)}`);
  await expect(page.getByText(/No held lock has a key starting with/)).toBeVisible();

  const sessionId = await api.openSession('locks-test-client', 300_000);
  const grant = await api.mustAcquire(`${needlePrefix}-1`, sessionId);
  const acquiredAt = Date.now();
  const row = page.locator(`[data-testid="lock-row"][data-key="${grant.key}"]`);
  // By itself, one refresh interval plus its round trip later on a quiet machine (the figure is printed); the bound
  // is 10 refreshes, which tells "refreshes by itself" from "needs a reload" without racing a busy machine.
  await expect(row).toBeVisible({ timeout: 10 * REFRESH_INTERVAL_MILLIS });
  console.log(`[figure] new lock visible on the locks page ${Date.now() - acquiredAt} ms after its grant`);
  await expect(row.getByTestId('lock-token')).toHaveText(grant.fencingToken);
  await expect(row).toContainText('locks-test-client');

  // Typing a prefix into the search box finds it among the 5,000 others.
  await page.goto('/locks');
  await page.getByTestId('prefix-input').fill(bulkPrefix);
  await expect(page.locator('[data-testid="lock-row"]').first()).toHaveAttribute('data-key', `${bulkPrefix}000000`);
  await page.getByTestId('prefix-input').fill(`${bulkPrefix}zz`);
  await expect(page.locator('[data-testid="lock-row"]')).toHaveCount(1);
  await expect(row).toBeVisible();
  await screenshot(page, 'locks-search');

  // Page through all 5,001 under the bulk prefix, 500 at a time, to the last page.
  await page.getByTestId('prefix-input').fill(bulkPrefix);
  await page.getByTestId('page-size').selectOption('500');
  await expect(page.locator('[data-testid="lock-row"]')).toHaveCount(500);
  let pages = 1;
  while (!(await page.getByTestId('page-status').textContent())?.includes('last page')) {
    const status = await page.getByTestId('page-status').textContent();
    await page.getByTestId('next-page').click();
    await expect(page.getByTestId('page-status')).not.toHaveText(status ?? '');
    pages += 1;
    expect(pages).toBeLessThanOrEqual(11);
  }
  expect(pages).toBe(11);
  await expect(page.getByTestId('page-status')).toHaveText('Page 11 · locks 5001–5001 · last page');
  await expect(page.locator('[data-testid="lock-row"]')).toHaveCount(1);
  await expect(page.getByTestId('next-page')).toBeDisabled();
  await screenshot(page, 'locks-last-page');

  for (const response of seen) {
    expect(Number(response.url.searchParams.get('limit'))).toBeLessThanOrEqual(MAX_PAGE_SIZE);
    expect(response.items).toBeLessThanOrEqual(MAX_PAGE_SIZE);
  }
  await api.closeSession(sessionId);
});

test('with 10,000 held locks the first page shows quickly and every request is one page', async ({ page }) => {
  test.setTimeout(300_000);
  const more = await holdManyLocks(api, `${bulkPrefix}b-`, 5_000, { sessions: 50, concurrency: 16 });
  batches.push(more);
  const held = await api.call<{ heldLocks: number }>('GET', '/v1/admin/summary', undefined, false);
  const admin = new LockApi(e2e.serverUrl, e2e.operatorToken);
  const summary = await admin.call<{ heldLocks: number }>('GET', '/v1/admin/summary', undefined, true);
  expect(held.status).toBe(401);
  expect(summary.body.heldLocks).toBeGreaterThanOrEqual(10_000);

  await signInWithForm(page, e2e.operatorToken);
  const seen = recordLockRequests(page);
  const started = Date.now();
  await page.goto('/locks');
  // 1.7 s measured at load average 10 (printed); the wait allows ≥ 10× that, the figure is what is reported.
  await expect(page.locator('[data-testid="lock-row"]').first()).toBeVisible({ timeout: 30_000 });
  const firstPageMillis = Date.now() - started;
  await expect(page.locator('[data-testid="lock-row"]')).toHaveCount(50);
  console.log(`[figure] locks page with ${summary.body.heldLocks} held locks: first page visible ${firstPageMillis} ms after navigation`);
  test.info().annotations.push({ type: 'first-page-millis', description: String(firstPageMillis) });
  await screenshot(page, 'locks-10000');

  // Search among the 10,000 still answers with one page.
  const searchStarted = Date.now();
  await page.getByTestId('prefix-input').fill(`${bulkPrefix}b-00499`);
  await expect(page.locator('[data-testid="lock-row"]')).toHaveCount(10, { timeout: 30_000 });
  console.log(`[figure] prefix search among 10,000: rows shown ${Date.now() - searchStarted} ms after typing (includes 300 ms debounce)`);

  expect(seen.length).toBeGreaterThan(0);
  for (const response of seen) {
    // No fetch-all: each request asks for one page and gets at most one page back, a few KB per 50 rows.
    expect(Number(response.url.searchParams.get('limit'))).toBeLessThanOrEqual(50);
    expect(response.items).toBeLessThanOrEqual(50);
    expect(response.bytes).toBeLessThan(50 * 400);
  }
  const totalBytes = seen.reduce((sum, r) => sum + r.bytes, 0);
  console.log(`[figure] ${seen.length} /api/locks responses, largest ${Math.max(...seen.map((r) => r.bytes))} bytes, total ${totalBytes} bytes`);
});
