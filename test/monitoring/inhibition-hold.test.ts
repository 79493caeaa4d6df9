/**
 * An inhibition ends with its source. After a store outage the symptoms that
 * `HoldfastStoreUnreachable` hides keep firing for as long as their windows
 * hold outage samples, so the root cause must keep firing (`keep_firing_for`)
 * at least that long, or they page once it resolves. Checked on the committed
 * rules by reading each symptom's windows from its expression (through the
 * recorded series it reads), not from the generator's own constants.
 */
import { describe, expect, it } from 'vitest';
import { STORE_OUTAGE_SYMPTOMS, inhibitions } from '../../alerts/alertmanager.js';
import { durationSeconds } from '../../alerts/config.js';
import { STORE_UNREACHABLE_ALERT } from '../../alerts/health-alerts.js';
import { FAST_BURN_ALERT, SLOW_BURN_ALERT } from '../../alerts/slo-alerts.js';
import { repoConfig } from '../../scripts/gen.js';
import { lookbackSeconds, recordedSeries } from './promql/lookback.js';
import { alertingRules, rules } from './sources.js';

/** A scrape and an evaluation interval at their usual ≤ 30 s: the symptom's last outage sample leaves its window that much late. */
const LAG_SECONDS = 60;

describe('store outage: the root cause outlasts the symptoms it inhibits', () => {
  const recorded = recordedSeries(rules());
  const lookbackOf = (alert: string) =>
    Math.max(...alertingRules().filter((rule) => rule.alert === alert).map((rule) => lookbackSeconds(rule.expr, recorded)));

  it('lookback reads range windows through recorded series, and `and` takes the shorter (the harness)', () => {
    expect(lookbackSeconds('sum by (backend) (rate(x_total[2m])) > 0', new Map())).toBe(120);
    expect(lookbackSeconds('histogram_quantile(0.99, sum by (le) (rate(x_bucket[5m]))) > 0.5', new Map())).toBe(300);
    expect(lookbackSeconds('sum by (backend) (lock_waiters) > 100', new Map())).toBe(0);
    const windows = new Map([
      ['r:ratio5m', ['sum(rate(x_total[5m])) / sum(rate(y_total[5m]))']],
      ['r:ratio1h', ['sum(rate(x_total[1h])) / sum(rate(y_total[1h]))']],
    ]);
    expect(lookbackSeconds('r:ratio1h > 0.1 and r:ratio5m > 0.1', windows)).toBe(300);
    expect(lookbackSeconds('r:ratio1h > 0.1 or r:ratio5m > 0.1', windows)).toBe(3600);
    expect(lookbackSeconds('max_over_time(r:ratio5m[10m])', windows)).toBe(900);
    // The committed symptoms, as their descriptions and the runbooks state them.
    expect(lookbackOf('HoldfastNotLeaderAnswers')).toBe(120);
    expect(lookbackOf('HoldfastSessionLossSpike')).toBe(600);
    expect(lookbackOf(FAST_BURN_ALERT)).toBe(1800);
    expect(lookbackOf(SLOW_BURN_ALERT)).toBe(6 * 3600);
  });

  it('the root cause inhibits the store-outage symptoms, and both of its signals keep firing alike', () => {
    const inhibited = inhibitions(repoConfig()).filter((rule) => rule.source === STORE_UNREACHABLE_ALERT);
    expect(inhibited.flatMap((rule) => rule.targets)).toEqual([...STORE_OUTAGE_SYMPTOMS]);
    const rootCause = alertingRules().filter((rule) => rule.alert === STORE_UNREACHABLE_ALERT);
    expect(rootCause.map((rule) => `${rule.labels?.signal}: ${rule.keep_firing_for}`)).toEqual(['health: 35m', 'errors: 35m']);
  });

  it('every page it inhibits (and every ticket but the slow burn) has emptied its windows a minute before the root cause stops firing', () => {
    const keep = Math.min(...alertingRules().filter((rule) => rule.alert === STORE_UNREACHABLE_ALERT).map((rule) => durationSeconds(rule.keep_firing_for ?? '0s')));
    const symptoms = alertingRules().filter((rule) => (STORE_OUTAGE_SYMPTOMS as readonly string[]).includes(rule.alert!));
    expect(new Set(symptoms.map((rule) => rule.alert))).toEqual(new Set(STORE_OUTAGE_SYMPTOMS));
    const outlasting = symptoms
      .filter((rule) => lookbackSeconds(rule.expr, recorded) + LAG_SECONDS > keep)
      .map((rule) => `${rule.alert} (${rule.labels?.severity}, short window ${rule.labels?.short_window ?? '?'})`);
    // The accepted exception: slow-burn tickets read windows of hours, and after a long outage they
    // say what it cost the budget (alerts/health-alerts.ts, storeOutageTail).
    expect(outlasting).toEqual([
      `${SLOW_BURN_ALERT} (warning, short window 2h)`,
      `${SLOW_BURN_ALERT} (warning, short window 6h)`,
    ]);
  });
});
