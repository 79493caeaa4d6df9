/** Console helpers: sign in through the real form or a one-time link, and keep screenshots as artifacts. */
import { expect, type Page } from '@playwright/test';
import path from 'node:path';

export async function signInWithForm(page: Page, token: string, consoleUrl = ''): Promise<void> {
  await page.goto(`${consoleUrl}/signin`);
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
}

/**
 * Mint a one-time sign-in link the way `npm start` does (POST /api/auth/codes with
 * the token as bearer); returns the path to open, `/signin?code=…`.
 */
export async function mintSignInPath(consoleUrl: string, token: string | undefined): Promise<{ status: number; path?: string; body: unknown }> {
  const response = await fetch(`${consoleUrl}/api/auth/codes`, {
    method: 'POST',
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
  const body = (await response.json().catch(() => undefined)) as { path?: string } | undefined;
  return { status: response.status, path: body?.path, body };
}

export async function signInWithLink(page: Page, token: string, consoleUrl: string): Promise<string> {
  const minted = await mintSignInPath(consoleUrl, token);
  expect(minted.status).toBe(201);
  await page.goto(minted.path!);
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
  return minted.path!;
}

/** Full-page screenshots land in test-results/screens/ (kept by CI as artifacts). */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join('test-results', 'screens', `${name}.png`), fullPage: true });
}
