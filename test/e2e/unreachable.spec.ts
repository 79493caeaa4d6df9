/**
 * Acceptance 6: with the lock server stopped, the console shows a clear "lock
 * server unreachable" state and recovers by itself when the server returns.
 * Runs its own server and console so stopping the server affects no other test.
 */
import { expect, test } from '@playwright/test';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { screenshot, signInWithForm } from './support/console.js';
import { e2e, uniquePrefix } from './support/env.js';
import { LockApi } from './support/lock-api.js';
import { freePort, startConsole, startLockServer, waitForUrl, type Proc } from './support/processes.js';

test('server stopped: the console says the lock server is unreachable, then recovers on its own', async ({ page }) => {
  test.setTimeout(300_000);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'holdfast-e2e-outage-'));
  const serverPort = await freePort();
  const consolePort = await freePort();
  const serverUrl = `http://127.0.0.1:${serverPort}`;
  const consoleUrl = `http://127.0.0.1:${consolePort}`;
  let server: Proc = startLockServer({ port: serverPort, dataDir, tokensFile: e2e.tokensFile });
  const consoleProc = startConsole({ port: consolePort, holdfastUrl: serverUrl });
  try {
    await waitForUrl(`${serverUrl}/readyz`, server);
    await waitForUrl(`${consoleUrl}/signin`, consoleProc);
    const api = new LockApi(serverUrl);
    const sessionId = await api.openSession('outage-test-client', 300_000);
    const prefix = uniquePrefix('outage');
    await api.mustAcquire(`${prefix}payout-1`, sessionId, 600_000);

    await signInWithForm(page, e2e.operatorToken, consoleUrl);
    await page.goto(`${consoleUrl}/`);
    await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
    // The console notices each change at its next 2 s poll (plus a request); the waits allow ≥ 10× that.
    await expect.poll(async () => Number(await page.getByTestId('fig-held-value').textContent()), { timeout: 40_000 }).toBeGreaterThanOrEqual(1);

    await server.stop();
    const banner = page.getByTestId('connection-banner');
    await expect(banner).toContainText('Lock server unreachable', { timeout: 40_000 });
    await expect(banner).toContainText(serverUrl);
    // The last good figures stay on screen, marked as old.
    await expect(banner).toContainText(/Figures on screen are from \d+ s ago/);
    await screenshot(page, 'overview-server-unreachable');
    await page.goto(`${consoleUrl}/locks`);
    await expect(page.getByTestId('error-state')).toContainText('Lock server unreachable');
    await screenshot(page, 'locks-server-unreachable');

    // Same port, same data dir: the server comes back with its locks.
    server = startLockServer({ port: serverPort, dataDir, tokensFile: e2e.tokensFile });
    await waitForUrl(`${serverUrl}/readyz`, server);
    await expect(page.getByTestId('error-state')).toHaveCount(0, { timeout: 40_000 });
    await expect(page.getByTestId('connection-banner')).toHaveCount(0, { timeout: 40_000 });
    await expect(page.locator(`[data-testid="lock-row"][data-key="${prefix}payout-1"]`)).toBeVisible();
    await screenshot(page, 'locks-recovered');
  } finally {
    await server.stop();
    await consoleProc.stop();
  }
});
