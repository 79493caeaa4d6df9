/** Console helpers: sign in through the real form or link, and keep screenshots as artifacts. */
import { expect, type Page } from '@playwright/test';
import path from 'node:path';

export async function signInWithForm(page: Page, token: string, consoleUrl = ''): Promise<void> {
  await page.goto(`${consoleUrl}/signin`);
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
}

export async function signInWithLink(page: Page, token: string): Promise<void> {
  await page.goto(`/signin?token=${encodeURIComponent(token)}`);
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
}

/** Full-page screenshots land in test-results/screens/ (kept by CI as artifacts). */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join('test-results', 'screens', `${name}.png`), fullPage: true });
}
