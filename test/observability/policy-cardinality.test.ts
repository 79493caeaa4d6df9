/**
 * Issue 26's cardinality budget for the `policy` label: lock_held and lock_oldest_held_seconds have
 * one series per policy in the file plus `policy=""` (keys under none), whatever keys are held, and a
 * policy removed from the file leaves no series behind.
 *
 * Part 1 drives the exporter with store summaries directly. Part 2 runs a real server on a policies
 * file with many randomly named keys: store `summary({ policies })` → exporter → /metrics.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { NO_POLICY, policyForKey } from '../../contract/policies.js';
import { createServerMetrics } from '../../exporter/server-metrics.js';
import { policySeries } from '../../exporter/store-gauges.js';
import { parsePolicies } from '../../lock/policies-file.js';
import type { PolicyHeldSummary, StoreSummary } from '../../lock/store/spi.js';
import { eventually, httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { parseExposition, scrape } from './support/scrape.js';

const POLICIES_YAML = `
- {name: payouts, prefix: payouts/, maxHoldMillis: 3600000}
- {name: payouts-eu, prefix: payouts/eu/, maxHoldMillis: 3600000}
- {name: reports, prefix: reports/}
`;
const POLICIES = parsePolicies(POLICIES_YAML, 'policies.yaml');

function summaryOf(rows: PolicyHeldSummary[]): StoreSummary & { byPolicy: PolicyHeldSummary[] } {
  const heldLocks = rows.reduce((n, row) => n + row.heldLocks, 0);
  return { heldLocks, activeSessions: 1, oldestHeldMillis: Math.max(0, ...rows.map((r) => r.oldestHeldMillis)), byPolicy: rows };
}

async function policyLabels(metrics: ReturnType<typeof createServerMetrics>, family: string): Promise<Map<string, number>> {
  const parsed = parseExposition(await metrics.registry.metrics()).get(family)!;
  return new Map(parsed.series.map((series) => [series.labels.policy!, series.value!]));
}

describe('the exporter', () => {
  test('one series per policy row and no more; a removed policy leaves no series; no rows: policy="" with the totals', async () => {
    const metrics = createServerMetrics('postgres', { collectDefaults: false });
    let summary: StoreSummary = summaryOf([
      { policy: 'payouts', heldLocks: 40, oldestHeldMillis: 5_000 },
      { policy: 'payouts-eu', heldLocks: 2, oldestHeldMillis: 9_000 },
      { policy: 'reports', heldLocks: 0, oldestHeldMillis: 0 },
      { policy: NO_POLICY, heldLocks: 7, oldestHeldMillis: 1_500 },
    ]);
    metrics.setGaugeSource('lockHeld', () => policySeries(summary, 'heldLocks'));
    metrics.setGaugeSource('lockOldestHeldSeconds', () => policySeries(summary, 'oldestHeldSeconds'));

    expect(await policyLabels(metrics, 'lock_held')).toEqual(new Map([['payouts', 40], ['payouts-eu', 2], ['reports', 0], ['', 7]]));
    expect(await policyLabels(metrics, 'lock_oldest_held_seconds')).toEqual(new Map([['payouts', 5], ['payouts-eu', 9], ['reports', 0], ['', 1.5]]));

    // "reports" removed from the file: the store no longer reports it, and neither does /metrics.
    summary = summaryOf([
      { policy: 'payouts', heldLocks: 41, oldestHeldMillis: 6_000 },
      { policy: 'payouts-eu', heldLocks: 2, oldestHeldMillis: 10_000 },
      { policy: NO_POLICY, heldLocks: 7, oldestHeldMillis: 2_500 },
    ]);
    expect([...(await policyLabels(metrics, 'lock_held')).keys()].sort()).toEqual(['', 'payouts', 'payouts-eu']);

    // A store that does not split by policy: its totals, as policy="".
    summary = { heldLocks: 12, activeSessions: 3, oldestHeldMillis: 4_000 };
    expect(await policyLabels(metrics, 'lock_held')).toEqual(new Map([['', 12]]));
    expect(await policyLabels(metrics, 'lock_oldest_held_seconds')).toEqual(new Map([['', 4]]));
  });
});

describe('a server on a policies file', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-policy-cardinality-'));
  let server: TestServer | undefined;
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('60 randomly named keys under every policy and none: policies + 1 series per family, each key counted under its policy', { timeout: 300_000 }, async () => {
    const file = path.join(dir, 'policies.yaml');
    writeFileSync(file, POLICIES_YAML);
    server = await startServer({
      env: { HOLDFAST_POLICIES_FILE: file, HOLDFAST_STORE_GAUGE_REFRESH_MS: '1000' },
    });
    const api = httpClient(server.url);
    const sessionId = (await api.openSession({ owner: 'cardinality', ttlMillis: 300_000 })).body.sessionId as string;
    const roots = ['payouts/', 'payouts/eu/', 'reports/', 'other/', ''];
    const expected = new Map<string, number>();
    const keys: string[] = [];
    for (let i = 0; i < 60; i += 1) {
      const key = `${roots[i % roots.length]}${randomBytes(6).toString('hex')}`;
      expect((await api.acquire(key, { sessionId, ttlMillis: 600_000 })).status).toBe(200);
      keys.push(key);
      const policy = policyForKey(POLICIES, key)?.name ?? NO_POLICY;
      expected.set(policy, (expected.get(policy) ?? 0) + 1);
    }

    const page = await eventually(async () => {
      const result = await scrape(server!.url);
      const held = result.families.get('lock_held')!.series;
      return held.reduce((n, s) => n + s.value!, 0) === keys.length ? result : undefined;
    }, 30_000, 100);
    for (const family of ['lock_held', 'lock_oldest_held_seconds']) {
      const series = page.families.get(family)!.series;
      expect(series.length, family).toBe(POLICIES.length + 1);
      expect(series.map((s) => s.labels.policy).sort()).toEqual([...POLICIES.map((p) => p.name), NO_POLICY].sort());
    }
    const held = new Map(page.families.get('lock_held')!.series.map((s) => [s.labels.policy!, s.value!]));
    expect(held).toEqual(expected);
    // No label value anywhere on the page is a key.
    const used = new Set(keys);
    for (const family of page.families.values()) {
      for (const series of family.series) for (const value of Object.values(series.labels)) expect(used.has(value)).toBe(false);
    }
  });
});
