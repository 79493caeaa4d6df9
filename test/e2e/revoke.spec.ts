/**
 * Acceptance 3 and 4: force-revoke through the dialog (reason required, typed
 * key must match; the lock disappears, the holder's next renew gets LOCK_LOST,
 * the audit page shows the entry with the operator's name and the reason), and
 * TOKEN_MISMATCH when the holder changes while the dialog is open.
 */
import { expect, test } from '@playwright/test';
import { screenshot, signInWithForm } from './support/console.js';
import { e2e, uniquePrefix } from './support/env.js';
import type { LockGrant } from '../../contract/records.js';
import { LockApi } from './support/lock-api.js';

const api = new LockApi(e2e.serverUrl);

test('force-revoke through the dialog: reason and typed key required, holder loses the lock, audit shows who and why', async ({ page }) => {
  const prefix = uniquePrefix('revoke');
  const key = `${prefix}payout-42`;
  const sessionId = await api.openSession('stuck-payout-worker');
  const grant = await api.mustAcquire(key, sessionId);
  const reason = `holder stuck since 02:40, INC-${Date.now()}`;

  await signInWithForm(page, e2e.operatorToken);
  await page.goto(`/locks?prefix=${encodeURIComponent(prefix)}`);
  const row = page.locator(`[data-testid="lock-row"][data-key="${key}"]`);
  await expect(row).toBeVisible();
  await row.getByRole('button', { name: `Revoke ${key}` }).click();

  const dialog = page.getByTestId('revoke-dialog');
  await expect(dialog).toBeVisible();
  await expect(dialog.getByTestId('revoke-holder')).toContainText('stuck-payout-worker');
  await expect(dialog.getByTestId('revoke-token')).toHaveText(grant.fencingToken);
  const submit = dialog.getByRole('button', { name: 'Revoke this lock' });
  await expect(submit).toBeDisabled();

  // A typed key that does not match keeps the button disabled, even with a reason.
  await dialog.getByLabel('Reason (required, goes to the audit trail)').fill(reason);
  await dialog.getByLabel(/Type the key/).fill(`${key}-typo`);
  await expect(dialog.getByText('The typed key does not match yet.')).toBeVisible();
  await expect(submit).toBeDisabled();
  // The right key without a reason is not enough either.
  await dialog.getByLabel(/Type the key/).fill(key);
  await dialog.getByLabel('Reason (required, goes to the audit trail)').fill('   ');
  await expect(submit).toBeDisabled();
  await dialog.getByLabel('Reason (required, goes to the audit trail)').fill(reason);
  await expect(submit).toBeEnabled();
  await screenshot(page, 'revoke-dialog');
  await submit.click();

  const outcome = dialog.getByTestId('revoke-outcome');
  await expect(outcome).toHaveAttribute('data-outcome', 'REVOKED');
  await expect(outcome).toContainText(`Token ${grant.fencingToken} no longer holds`);
  await screenshot(page, 'revoke-done');

  // The holder's next renew is refused.
  const renew = await api.renew(key, sessionId, grant.fencingToken);
  expect(renew.status).toBe(409);
  expect(renew.code).toBe('LOCK_LOST');
  expect((await api.readLock(key)).body.held).toBe(false);

  // The result links the audit entry, which names the operator and the reason.
  await dialog.getByTestId('outcome-audit-link').click();
  await expect(page).toHaveURL(/\/audit\?/);
  const entry = page.locator('[data-testid="audit-row"].row-highlight');
  await expect(entry).toContainText(e2e.operatorName);
  await expect(entry).toContainText(reason);
  await expect(entry).toContainText('lock.revoke');
  await expect(entry).toContainText('REVOKED');
  await expect(page.getByTestId('chain-state')).toHaveAttribute('data-state', 'verified');
  await screenshot(page, 'audit');

  // The lock is gone from the locks page.
  await page.goto(`/locks?prefix=${encodeURIComponent(prefix)}`);
  await expect(page.getByText(/No held lock has a key starting with/)).toBeVisible();

  // Lock detail shows it free, with the revoke in its audit history.
  await page.goto(`/locks/${encodeURIComponent(key)}`);
  await expect(page.getByTestId('lock-free')).toBeVisible();
  await expect(page.getByTestId('audit-row')).toContainText(reason);
  await screenshot(page, 'lock-detail-after-revoke');
  await api.closeSession(sessionId);
});

test('TOKEN_MISMATCH: the holder changes while the dialog is open; nothing is revoked and the console says why', async ({ page }) => {
  const prefix = uniquePrefix('mismatch');
  const key = `${prefix}payout-7`;
  const first = await api.openSession('payout-worker-a');
  const firstGrant = await api.mustAcquire(key, first);

  await signInWithForm(page, e2e.operatorToken);
  await page.goto(`/locks/${encodeURIComponent(key)}`);
  await expect(page.getByTestId('detail-token')).toHaveText(firstGrant.fencingToken);
  await screenshot(page, 'lock-detail');
  await page.getByRole('button', { name: 'Force-revoke…' }).click();
  const dialog = page.getByTestId('revoke-dialog');
  await expect(dialog.getByTestId('revoke-token')).toHaveText(firstGrant.fencingToken);

  // Meanwhile the first holder releases and another worker takes the lock.
  await api.release(key, first, firstGrant.fencingToken);
  const second = await api.openSession('payout-worker-b');
  const secondGrant = await api.mustAcquire(key, second);
  expect(BigInt(secondGrant.fencingToken)).toBeGreaterThan(BigInt(firstGrant.fencingToken));

  await dialog.getByLabel('Reason (required, goes to the audit trail)').fill('looked stuck');
  await dialog.getByLabel(/Type the key/).fill(key);
  await dialog.getByRole('button', { name: 'Revoke this lock' }).click();

  const outcome = dialog.getByTestId('revoke-outcome');
  await expect(outcome).toHaveAttribute('data-outcome', 'TOKEN_MISMATCH');
  await expect(outcome).toContainText('Nothing was revoked');
  await expect(outcome).toContainText('changed hands after you opened this dialog');
  await expect(outcome).toContainText('payout-worker-b');
  await expect(outcome).toContainText(secondGrant.fencingToken);
  await screenshot(page, 'revoke-token-mismatch');

  // The new holder still holds and can renew.
  const info = await api.readLock(key);
  expect(info.body.held).toBe(true);
  expect(info.body.fencingToken).toBe(secondGrant.fencingToken);
  const renew = await api.renew(key, second, secondGrant.fencingToken);
  expect(renew.status).toBe(200);
  await api.closeSession(first);
  await api.closeSession(second);
});

test('a semaphore: the revoke on one holder row ends that permit alone, not the lowest-token one', async ({ page }) => {
  const prefix = uniquePrefix('permit');
  const key = `${prefix}export-slots`;
  const sessions = [await api.openSession('exporter-a'), await api.openSession('exporter-b'), await api.openSession('exporter-stuck')];
  const grants: LockGrant[] = [];
  for (const sessionId of sessions) {
    const answer = await api.call<LockGrant>('POST', `/v1/locks/${encodeURIComponent(key)}/acquire`, { sessionId, ttlMillis: 120_000, limit: 3 }, { session: sessionId });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    grants.push(answer.body);
  }
  const stuck = grants[2]!;

  await signInWithForm(page, e2e.operatorToken);
  await page.goto(`/locks/${encodeURIComponent(key)}`);
  await expect(page.getByTestId('holder-row')).toHaveCount(3);
  await page.locator(`[data-testid="holder-row"][data-token="${stuck.fencingToken}"]`).getByRole('button', { name: `Revoke token ${stuck.fencingToken}` }).click();

  const dialog = page.getByTestId('revoke-dialog');
  await expect(dialog.getByTestId('revoke-holder')).toContainText('exporter-stuck');
  await expect(dialog.getByTestId('revoke-token')).toHaveText(stuck.fencingToken);
  await dialog.getByLabel('Reason (required, goes to the audit trail)').fill('permit stuck on a dead export');
  await dialog.getByLabel(/Type the key/).fill(key);
  await dialog.getByRole('button', { name: 'Revoke this lock' }).click();
  await expect(dialog.getByTestId('revoke-outcome')).toHaveAttribute('data-outcome', 'REVOKED');
  await screenshot(page, 'revoke-one-permit');

  // That permit is gone; the two others still hold theirs.
  expect((await api.renew(key, sessions[2]!, stuck.fencingToken)).code).toBe('LOCK_LOST');
  for (const [i, grant] of grants.slice(0, 2).entries()) expect((await api.renew(key, sessions[i]!, grant.fencingToken)).status).toBe(200);
  const info = (await api.readLock(key)).body;
  expect(info.holders?.map((holder) => holder.fencingToken)).toEqual(grants.slice(0, 2).map((grant) => grant.fencingToken));
  for (const sessionId of sessions) await api.closeSession(sessionId);
});
