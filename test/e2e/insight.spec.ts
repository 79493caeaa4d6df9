/**
 * Issue 14, console truth: on a private server (nobody else's traffic), drive a
 * known workload and check that the console's figures equal what was done, within
 * the refresh interval; kill a session from the sessions page; draw a deadlock;
 * the held-longest list; the burn-rate card against a real Prometheus scraping
 * the server with the generated rules loaded. Screenshots go to docs/screenshots/.
 */
import { expect, test, type Page } from '@playwright/test';
import { formatPercent, formatRate } from '../../app/lib/format.js';
import { screenshot, signInWithForm } from './support/console.js';
import { docScreenshot } from './support/doc-screenshots.js';
import { e2e } from './support/env.js';
import { LockApi, type Answer } from './support/lock-api.js';
import { startPrivateStack, type PrivateStack } from './support/private-stack.js';

/**
 * The console polls every 2 s (app/components/live.tsx): a figure is true one refresh later, plus a request and a
 * render, on a quiet machine. The waits allow 10 refreshes: still "the console catches up by itself", without racing
 * a busy machine (they only bound a failure).
 */
const REFRESH_MILLIS = 2_000;
const WITHIN_REFRESH = { timeout: 10 * REFRESH_MILLIS };
/** The A5 rates are per second over the last minute, rounded to 3 decimals by the server. */
const perMinuteRate = (count: number) => formatRate(Math.round((count / 60) * 1000) / 1000);

test.describe.configure({ mode: 'serial' });

let stack: PrivateStack;
let api: LockApi;
let oldest: { key: string; grantedAt: number; sessionId: string };

test.beforeAll(async () => {
  test.setTimeout(180_000);
  stack = await startPrivateStack({
    prometheus: true,
    serverEnv: { HOLDFAST_SWEEP_INTERVAL_MS: '100', HOLDFAST_STORE_GAUGE_REFRESH_MS: '500' },
  });
  api = new LockApi(stack.serverUrl, e2e.operatorToken);
  // Held for the whole spec: by the last test it is older than a minute (age highlighting).
  const sessionId = await api.openSession('nightly-report', 300_000);
  const grant = await api.mustAcquire('reports/nightly', sessionId, 600_000);
  oldest = { key: grant.key, grantedAt: grant.grantedAt, sessionId };
});

test.afterAll(async () => {
  await stack?.stop();
});

function waitingAcquire(key: string, sessionId: string, waitMillis: number): Promise<Answer<unknown>> {
  return api.call('POST', `/v1/locks/${encodeURIComponent(key)}/acquire`, { sessionId, waitMillis }, { session: sessionId });
}

async function figure(page: Page, id: string): Promise<string> {
  return (await page.getByTestId(`${id}-value`).textContent()) ?? '';
}

test('overview truth: waiters, contention and session loss equal the workload once the console has refreshed', async ({ page }) => {
  test.setTimeout(120_000);
  await signInWithForm(page, e2e.operatorToken, stack.consoleUrl);
  // Nothing has waited, been contended or lost yet on this server.
  await expect.poll(() => figure(page, 'fig-waiters'), WITHIN_REFRESH).toBe('0');
  await expect.poll(() => figure(page, 'fig-contention'), WITHIN_REFRESH).toBe('0/s');
  await expect.poll(() => figure(page, 'fig-session-loss'), WITHIN_REFRESH).toBe('0/s');

  const holder = await api.openSession('truth-holder', 120_000);
  await api.mustAcquire('truth/hot', holder);
  await api.mustAcquire('truth/warm', holder);

  // N waiters parked on the server behind the holder.
  const WAITERS = 4;
  const waiterSessions = await Promise.all(Array.from({ length: WAITERS }, (_, i) => api.openSession(`truth-waiter-${i}`, 120_000)));
  const waits = waiterSessions.map((s) => waitingAcquire('truth/hot', s, 30_000));

  // M contended attempts per second on the hot key (and 1/s on the warm one) for S seconds.
  const PER_SECOND = 5;
  const SECONDS = 4;
  const contender = await api.openSession('truth-contender', 120_000);
  let contended = { hot: 0, warm: 0 };
  for (let second = 0; second < SECONDS; second += 1) {
    const started = Date.now();
    for (let i = 0; i < PER_SECOND; i += 1) if ((await api.acquire('truth/hot', contender)).status === 409) contended.hot += 1;
    if ((await api.acquire('truth/warm', contender)).status === 409) contended.warm += 1;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1000 - (Date.now() - started)))); // the workload's pace
  }
  expect(contended).toEqual({ hot: PER_SECOND * SECONDS, warm: SECONDS });

  // K sessions lost: two killed by an operator, two expired (no heartbeat within their 1 s TTL).
  const killed = await Promise.all([api.openSession('truth-killed-0'), api.openSession('truth-killed-1')]);
  for (const s of killed) {
    await api.mustAcquire(`truth/killed-${s}`, s);
    expect((await api.call('POST', `/v1/admin/sessions/${s}/kill`, { reason: 'truth test' }, true)).status).toBe(200);
  }
  const expiring = await Promise.all([api.openSession('truth-expired-0', 1_000), api.openSession('truth-expired-1', 1_000)]);
  // Gone 1–2 s after their open; the deadline only bounds a failure.
  await expect
    .poll(
      async () => {
        const gone = await Promise.all(expiring.map(async (s) => (await api.heartbeat(s)).status === 404));
        return gone.every(Boolean);
      },
      { timeout: 30_000 },
    )
    .toBe(true);
  const lost = killed.length + expiring.length;

  // The overview says exactly that, one refresh later.
  await expect.poll(() => figure(page, 'fig-waiters'), WITHIN_REFRESH).toBe(String(WAITERS));
  await expect.poll(() => figure(page, 'fig-contention'), WITHIN_REFRESH).toBe(perMinuteRate(contended.hot + contended.warm));
  await expect.poll(() => figure(page, 'fig-session-loss'), WITHIN_REFRESH).toBe(perMinuteRate(lost));
  // The overview's contention card: the two keys, most contended first, with their counts.
  const cardRows = page.getByTestId('contention-card-row');
  await expect.poll(async () => cardRows.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key'))), WITHIN_REFRESH).toEqual([
    'truth/hot',
    'truth/warm',
  ]);
  await expect(page.getByTestId('contention-card-count')).toHaveText([String(contended.hot), String(contended.warm)]);
  await docScreenshot(page, 'overview');

  // The contention page: the same counts, the hot key's waiters and its holder.
  await page.getByRole('link', { name: 'Contention', exact: true }).click();
  const hot = page.locator('[data-testid="contention-row"][data-key="truth/hot"]');
  await expect(hot.getByTestId('contention-count')).toHaveText(String(contended.hot), WITHIN_REFRESH);
  await expect(hot.getByTestId('contention-waiters')).toHaveText(`${WAITERS} waiting`);
  await expect(hot).toContainText('truth-holder');
  await expect(page.locator('[data-testid="contention-row"][data-key="truth/warm"]').getByTestId('contention-count')).toHaveText(String(contended.warm));
  await docScreenshot(page, 'contention');

  // The waits page: one arrow from each waiter to the holder, no cycle.
  await page.getByRole('link', { name: 'Waits', exact: true }).click();
  await expect(page.getByTestId('wait-row')).toHaveCount(WAITERS, WITHIN_REFRESH);
  await expect(page.getByTestId('wait-edge')).toHaveCount(WAITERS);
  await expect(page.locator('[data-testid="wait-node"][data-session="' + holder + '"]')).toBeVisible();
  await expect(page.locator('[data-testid="wait-edge"][data-cycle="yes"]')).toHaveCount(0);
  await expect(page.getByTestId('deadlock-banner')).toHaveCount(0);

  // The key's page: who waits for it and for whom, by owner, from the same fleet-wide wait state.
  await page.getByTestId('wait-row').first().getByRole('link', { name: 'truth/hot' }).click();
  await expect(page.getByTestId('key-wait-row')).toHaveCount(WAITERS, WITHIN_REFRESH);
  for (let i = 0; i < WAITERS; i += 1) await expect(page.getByTestId('key-waits-table')).toContainText(`truth-waiter-${i}`);
  await expect(page.getByTestId('key-wait-holder')).toHaveCount(WAITERS);
  for (const cell of await page.getByTestId('key-wait-holder').all()) await expect(cell).toContainText('truth-holder');

  // Closing the waiters' sessions ends their waits (closed is not a session loss).
  await Promise.all(waiterSessions.map((s) => api.closeSession(s)));
  expect((await Promise.all(waits)).map((answer) => answer.status)).toEqual(waiterSessions.map(() => 404));
  await expect(page.getByTestId('key-wait-row')).toHaveCount(0, WITHIN_REFRESH);
  await page.getByRole('link', { name: 'Overview', exact: true }).click();
  await expect.poll(() => figure(page, 'fig-waiters'), WITHIN_REFRESH).toBe('0');
  await expect.poll(() => figure(page, 'fig-session-loss'), WITHIN_REFRESH).toBe(perMinuteRate(lost));
  await api.closeSession(contender);
  await api.closeSession(holder);
});

test('a wait for a semaphore permit: a dashed arrow to each holder, never a deadlock, and the key page names them all', async ({ page }) => {
  test.setTimeout(120_000);
  const key = 'pool/replica-slots';
  const holders = await Promise.all(['slot-holder-a', 'slot-holder-b'].map((owner) => api.openSession(owner, 120_000)));
  for (const sessionId of holders) {
    const granted = await api.call('POST', `/v1/locks/${encodeURIComponent(key)}/acquire`, { sessionId, limit: 2 }, { session: sessionId });
    expect(granted.status).toBe(200);
  }
  const waiter = await api.openSession('slot-waiter', 120_000);
  // Asked again whenever a whole wait passes (a slow machine may take longer than one to get here).
  const wait = (async () => {
    for (;;) {
      const answer = await api.call('POST', `/v1/locks/${encodeURIComponent(key)}/acquire`, { sessionId: waiter, limit: 2, waitMillis: 30_000 }, { session: waiter });
      if (answer.status !== 409) return answer;
    }
  })();

  await signInWithForm(page, e2e.operatorToken, stack.consoleUrl);
  await page.getByRole('link', { name: 'Waits', exact: true }).click();
  const edges = page.locator(`[data-testid="wait-edge"][data-key="${key}"]`);
  await expect(edges).toHaveCount(2, WITHIN_REFRESH);
  await expect(edges.and(page.locator('[data-kind="semaphore"][data-cycle="no"]'))).toHaveCount(2);
  await expect(page.getByTestId('wait-holder-kind')).toHaveText(['semaphore', 'semaphore']);
  await expect(page.getByTestId('deadlock-banner')).toHaveCount(0);

  await page.getByTestId('wait-row').first().getByRole('link', { name: key }).click();
  await expect(page.getByTestId('key-wait-row')).toHaveCount(1, WITHIN_REFRESH);
  await expect(page.getByTestId('key-wait-row')).toContainText('slot-waiter');
  await expect(page.getByTestId('key-wait-holder')).toHaveCount(2);
  await expect(page.getByTestId('key-waits-table')).toContainText('slot-holder-a');
  await expect(page.getByTestId('key-waits-table')).toContainText('slot-holder-b');

  // One holder leaves: the waiter gets its permit, and the page shows nobody waiting.
  await api.closeSession(holders[0]!);
  expect((await wait).status).toBe(200);
  await expect(page.getByTestId('key-wait-row')).toHaveCount(0, WITHIN_REFRESH);
  await Promise.all([api.closeSession(holders[1]!), api.closeSession(waiter)]);
});

test('kill a session from the sessions page: its locks are freed and the audit entry names who and why', async ({ page }) => {
  const victim = await api.openSession('runaway-worker', 120_000);
  const keys = ['kill/a', 'kill/b'];
  const grants = await Promise.all(keys.map((k) => api.mustAcquire(k, victim)));
  const reason = `runaway worker, INC-${Date.now()}`;

  await signInWithForm(page, e2e.operatorToken, stack.consoleUrl);
  await page.getByRole('link', { name: 'Sessions', exact: true }).click();
  const row = page.locator(`[data-testid="session-row"][data-session="${victim}"]`);
  await expect(row).toContainText('runaway-worker');
  await row.getByRole('button', { name: `Kill session ${victim}` }).click();
  const dialog = page.getByTestId('kill-dialog');
  await dialog.getByLabel('Reason (required, goes to the audit trail)').fill(reason);
  await dialog.getByLabel(/Type the session id/).fill(victim);
  await dialog.getByRole('button', { name: 'Kill this session' }).click();
  await expect(dialog.getByTestId('kill-outcome')).toHaveAttribute('data-outcome', 'KILLED');

  // Its locks are free (the server's word, not the page's) and the session is gone from the page.
  for (const key of keys) expect((await api.readLock(key)).body.held).toBe(false);
  expect((await api.heartbeat(victim)).status).toBe(404);

  // The audit entry: who, what, why.
  await dialog.getByRole('link', { name: /Audit entry \d+/ }).click();
  const entry = page.locator('[data-testid="audit-row"]', { hasText: victim }).first();
  await expect(entry).toContainText('session.kill');
  await expect(entry).toContainText(e2e.operatorName);
  await expect(entry).toContainText(reason);
  await screenshot(page, 'audit-after-kill');

  // The key's history shows the grant and its end by the kill, with the token and the operator.
  await page.goto(`${stack.consoleUrl}/locks/${encodeURIComponent('kill/a')}`);
  const ended = page.locator('[data-testid="history-row"][data-kind="session_ended"]');
  await expect(ended.getByTestId('history-token')).toHaveText(grants[0]!.fencingToken);
  await expect(ended).toContainText(e2e.operatorName);
  await expect(ended).toContainText(reason);
  await expect(page.locator('[data-testid="history-row"][data-kind="granted"]').getByTestId('history-token')).toHaveText(grants[0]!.fencingToken);
  await docScreenshot(page, 'lock-history');
});

test('a deadlock is broken and shown: the youngest wait gets DEADLOCK_DETECTED, the waits page names the cycle', async ({ page }) => {
  const a = await api.openSession('deadlock-a', 120_000);
  const b = await api.openSession('deadlock-b', 120_000);
  await api.mustAcquire('deadlock/x', a);
  await api.mustAcquire('deadlock/y', b);
  // a waits for y (held by b), then b waits for x (held by a): a cycle no release would break.
  const older = waitingAcquire('deadlock/y', a, 30_000);
  await expect.poll(async () => (await api.call<{ waiterCount: number }>('GET', '/v1/locks/deadlock%2Fy')).body.waiterCount).toBe(1);
  const younger = waitingAcquire('deadlock/x', b, 30_000);
  try {
    // The fleet's deadlock check answers the youngest wait (b's) 409 DEADLOCK_DETECTED; b keeps y.
    const victim = await younger;
    expect(victim.status).toBe(409);
    expect((victim.body as { error: { code: string } }).error.code).toBe('DEADLOCK_DETECTED');
    await signInWithForm(page, e2e.operatorToken, stack.consoleUrl);
    await page.getByRole('link', { name: 'Waits', exact: true }).click();
    const broken = page.getByTestId('deadlock-broken').first();
    await expect(broken).toContainText(b, WITHIN_REFRESH);
    await expect(broken).toContainText(a);
    await expect(broken).toContainText('deadlock/x');
    await expect(broken).toContainText('deadlock/y');
    await expect(broken).toContainText(`${b} was answered DEADLOCK_DETECTED on deadlock/x`);
    // a still waits for y: the graph shows that one wait, no cycle any more.
    await expect(page.locator(`[data-testid="wait-node"][data-session="${a}"]`)).toHaveCount(1, WITHIN_REFRESH);
    await expect(page.locator('[data-testid="wait-edge"][data-cycle="yes"]')).toHaveCount(0);
    await docScreenshot(page, 'waits-deadlock');
    // Once the victim gives back what it holds, the survivor is granted.
    await api.closeSession(b);
    expect((await older).status).toBe(200);
  } finally {
    await api.closeSession(a);
    await api.closeSession(b).catch(() => undefined);
    await Promise.allSettled([older, younger]);
  }
});

test('held longest: oldest grants first, store-wide, with age highlighting', async ({ page }) => {
  // Up to a minute of waiting out a real hold time, plus the refreshes.
  test.setTimeout(240_000);
  const s = await api.openSession('young-holder', 120_000);
  await api.mustAcquire('young/1', s);
  await signInWithForm(page, e2e.operatorToken, stack.consoleUrl);
  const rows = page.getByTestId('held-longest-row');
  await expect(rows.first()).toHaveAttribute('data-key', oldest.key, WITHIN_REFRESH);
  await expect(page.locator('[data-testid="held-longest-row"][data-key="young/1"] [data-testid="lock-age"]')).toHaveAttribute('data-tone', 'ok');
  // Wait out the real hold time: past a minute the oldest lock's age turns to a warning.
  const remaining = 61_000 - (Date.now() - oldest.grantedAt);
  const oldestAge = page.locator(`[data-testid="held-longest-row"][data-key="${oldest.key}"] [data-testid="lock-age"]`);
  await expect(oldestAge).toHaveAttribute('data-tone', 'warn', { timeout: Math.max(0, remaining) + WITHIN_REFRESH.timeout });
  await expect(page.getByTestId('card-held-longest')).toContainText('nightly-report');

  // The locks page's "held longest (all locks)" asks the server for the same order.
  await page.getByRole('link', { name: 'All' }).nth(1).click();
  await expect(page).toHaveURL(/\/locks\?sort=age/);
  await expect(page.getByTestId('lock-row').first()).toHaveAttribute('data-key', oldest.key, WITHIN_REFRESH);
  await expect(page.getByTestId('lock-row').first().getByTestId('lock-age')).toHaveAttribute('data-tone', 'warn');
  await docScreenshot(page, 'locks-held-longest');
  await api.closeSession(s);
});

test('the burn-rate card shows what a real Prometheus computes from the generated rules', async ({ page }) => {
  test.setTimeout(120_000);
  const prometheus = stack.prometheus!;
  // Traffic the S1 rules count (L4/L5/L6), so the ratios are defined.
  const s = await api.openSession('slo-traffic', 120_000);
  for (let i = 0; i < 5; i += 1) {
    const grant = await api.mustAcquire(`slo/${i}`, s);
    await api.release(grant.key, s, grant.fencingToken);
  }
  const windows = ['5m', '1h', '6h'] as const;
  const burnExpr = (w: string) => `max(holdfast:slo_errors:ratio_rate${w}) / 0.001`;
  const budgetExpr = '1 - max(holdfast:slo_errors:ratio_increase30d) / 0.001';
  for (const w of windows) await prometheus.until(burnExpr(w));
  await prometheus.until(budgetExpr);
  // The console divides by the recorded budget (1 − objective): 0.001 with the default objective.
  const [recordedBudget] = await prometheus.query('holdfast:slo_error_budget:ratio');
  expect(Number(recordedBudget!.value[1])).toBe(0.001);

  await signInWithForm(page, e2e.operatorToken, stack.consoleUrl);
  const card = page.getByTestId('fig-slo');
  for (const w of windows) {
    const [sample] = await prometheus.query(burnExpr(w));
    const expected = `${Number(sample!.value[1]).toFixed(2)}×`;
    await expect(card.locator('tr', { hasText: `burn ${w}` }).locator('td')).toHaveText(expected, WITHIN_REFRESH);
  }
  const [budget] = await prometheus.query(budgetExpr);
  await expect(card.locator('tr', { hasText: 'budget left (30d)' }).locator('td')).toHaveText(formatPercent(Number(budget!.value[1]), 1), WITHIN_REFRESH);
  await expect(card).not.toContainText('Prometheus:');
  await docScreenshot(page, 'overview-slo-prometheus');
  await api.closeSession(s);
});
