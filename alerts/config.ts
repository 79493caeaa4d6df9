/**
 * The generators' configuration, in the style of a monitoring mixin's `_config`:
 * defaults here, overridden per fleet by an optional `monitoring.config.yaml`
 * at the repository root that `npm run gen` reads. Every number that decides
 * when someone is paged lives here, so a reviewer reads them in one place and a
 * fleet changes them without a fork.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/** Default scrape job name (`job_name` in prometheus.yml) that the default selector matches. */
export const HOLDFAST_JOB = 'holdfast';

/** Every alert carries `service="holdfast"`: one matcher routes all of Holdfast in a shared Alertmanager. */
export const SERVICE = 'holdfast';

/** The SLO name that burn-rate alerts carry as `slo`. */
export const SLO_NAME = 's1-availability';

/**
 * What an alert asks of a human, and the `severity` label that says it in
 * Alertmanager's usual words: a page wakes someone, a ticket waits for working hours.
 */
export const SEVERITY = { page: 'critical', ticket: 'warning', info: 'info' } as const;
export type Action = keyof typeof SEVERITY;

/** Store operations on the request path whose latency a client waits for. */
export const STORE_WRITE_OPS = ['try_acquire', 'renew', 'release', 'heartbeat'] as const;

/** The override file `npm run gen` reads when it exists (repository root). */
export const OVERRIDE_FILE = 'monitoring.config.yaml';

const DURATION = /^(\d+(ms|[smhdwy]))+$/;
const duration = z.string().regex(DURATION, 'a Prometheus duration such as 30s, 5m or 1h30m');
const labelName = z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/, 'a Prometheus label name');
/** `job="holdfast"` or several comma-separated matchers, as written inside `{…}`. */
const MATCHERS = /^\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"\s*(,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"\s*)*$/;

const burnTier = z.strictObject({
  long: duration,
  short: duration,
  /** Multiple of the budget rate; 1 spends exactly the budget in the compliance window. */
  factor: z.number().positive(),
  action: z.enum(['page', 'ticket']),
  for: duration,
});

const configSchema = z.strictObject({
  /** Label matchers every raw series in every rule and dashboard query carries. */
  jobSelector: z.string().regex(MATCHERS, 'label matchers such as job="holdfast"'),
  /** A label that tells fleets apart (e.g. `cluster`): aggregated by, grouped by, kept on every alert. */
  clusterLabel: labelName.nullable(),
  /** Where `runbook_url` points; the file part is always `<slug>.md`. Must end with `/`. */
  runbookBaseUrl: z.url().regex(/\/$/, 'must end with /'),
  slo: z.strictObject({
    /** S1 objective, e.g. 0.999; the error budget is 1 − objective. */
    objective: z.number().gt(0).lt(1),
    /** Multi-window, multi-burn-rate tiers (SRE workbook, chapter 5, table 5-8). */
    burnTiers: z.array(burnTier).min(1),
  }),
  thresholds: z.strictObject({
    /** Session-loss spike: TTL expiries in 10 m above this share of active sessions… */
    sessionTtlExpiryShare: z.number().positive(),
    /** …and above this absolute count, so a 3-session dev cluster does not page. */
    sessionTtlExpiryMin: z.number().nonnegative(),
    /** Share of acquires refused with CONTENTION_EXCEEDED, sustained. */
    contentionExceededShare: z.number().positive(),
    /** Waiters summed over a backend's instances. */
    waiters: z.number().positive(),
    /** Share of server-side waits that fell back to polling (broken watches). */
    waitFallbackShare: z.number().positive(),
    /** p99 latency (seconds) of store writes on the request path. */
    storeWriteP99Seconds: z.number().positive(),
    /** Share of store operations failing that means the store is unreachable. */
    storeErrorShare: z.number().gt(0).lt(1),
    /** Window of that share: at least two scrape intervals. */
    storeErrorWindow: duration,
    /**
     * Window of the NOT_LEADER answer rate: at least two scrape intervals, and short enough that
     * `for` (not the window) decides how long a leader election may last without paging.
     */
    notLeaderWindow: duration,
    /** Age (seconds) of the oldest held lock that is "held too long". */
    lockHeldTooLongSeconds: z.number().positive(),
    /** Age (seconds) of the oldest overdue expiry the sweeper has not processed. */
    sweepLagSeconds: z.number().positive(),
  }),
  /** Pending duration per alert name (Prometheus `for`); burn-rate tiers carry their own. */
  for: z.record(z.string(), duration),
  /**
   * How long an alert keeps firing once its expression is false (Prometheus `keep_firing_for`,
   * Prometheus ≥ 2.42), per alert name. Unset, `HoldfastStoreUnreachable` derives its own from the
   * windows of the symptoms it inhibits (`storeOutageTail` in alerts/health-alerts.ts).
   */
  keepFiringFor: z.record(z.string(), duration),
  alertmanager: z.strictObject({
    groupWait: duration,
    groupInterval: duration,
    repeatInterval: duration,
    /** The dead-man's switch expects the Watchdog at least this often. */
    watchdogRepeatInterval: duration,
  }),
});

export type MonitoringConfig = z.infer<typeof configSchema>;
export type BurnTierConfig = MonitoringConfig['slo']['burnTiers'][number];

export const DEFAULT_CONFIG: MonitoringConfig = {
  jobSelector: `job="${HOLDFAST_JOB}"`,
  clusterLabel: null,
  runbookBaseUrl: 'https://github.com/holdfast/holdfast/blob/main/runbooks/',
  slo: {
    objective: 0.999,
    burnTiers: [
      { long: '1h', short: '5m', factor: 14.4, action: 'page', for: '2m' },
      { long: '6h', short: '30m', factor: 6, action: 'page', for: '15m' },
      { long: '1d', short: '2h', factor: 3, action: 'ticket', for: '1h' },
      { long: '3d', short: '6h', factor: 1, action: 'ticket', for: '3h' },
    ],
  },
  thresholds: {
    sessionTtlExpiryShare: 0.1,
    sessionTtlExpiryMin: 5,
    contentionExceededShare: 0.05,
    waiters: 100,
    waitFallbackShare: 0.1,
    storeWriteP99Seconds: 0.5,
    storeErrorShare: 0.1,
    storeErrorWindow: '2m',
    notLeaderWindow: '2m',
    lockHeldTooLongSeconds: 3600,
    sweepLagSeconds: 30,
  },
  for: {
    // Shorter than every symptom it inhibits, so the root cause reaches Alertmanager first.
    HoldfastStoreUnreachable: '1m',
    HoldfastSessionLossSpike: '5m',
    HoldfastContentionExceededSustained: '15m',
    HoldfastWaitersPilingUp: '10m',
    HoldfastWaitFallbackRate: '15m',
    HoldfastNotLeaderAnswers: '5m',
    HoldfastStoreSlow: '10m',
    HoldfastDeadlockDetected: '5m',
    HoldfastLockHeldTooLong: '5m',
    HoldfastSweepLagging: '5m',
    HoldfastTargetDown: '5m',
    HoldfastTargetMissing: '5m',
  },
  keepFiringFor: {},
  alertmanager: {
    groupWait: '30s',
    groupInterval: '5m',
    repeatInterval: '4h',
    watchdogRepeatInterval: '1m',
  },
};

/** A partial config, as an override file or a test writes it: objects merge, arrays and scalars replace. */
export type ConfigOverride = { [K in keyof MonitoringConfig]?: unknown };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function merge(base: unknown, override: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(override)) return override === undefined ? base : override;
  const result: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) result[key] = merge(base[key], value);
  return result;
}

/** Defaults with `override` merged in, validated: a typo in a key or a bad duration fails generation. */
export function resolveConfig(override: ConfigOverride = {}): MonitoringConfig {
  const parsed = configSchema.safeParse(merge(DEFAULT_CONFIG, override));
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`);
    throw new Error(`monitoring config is invalid:\n  ${problems.join('\n  ')}`);
  }
  return parsed.data;
}

/** The config `npm run gen` uses: defaults, plus the override file when it exists. */
export function loadConfig(overrideFile: string): MonitoringConfig {
  if (!existsSync(overrideFile)) return resolveConfig();
  const override = parseYaml(readFileSync(overrideFile, 'utf8')) as unknown;
  if (override !== null && !isPlainObject(override)) throw new Error(`${overrideFile}: expected a mapping at the top level`);
  return resolveConfig((override ?? {}) as ConfigOverride);
}

/** Labels the rules aggregate to and Alertmanager groups by, besides `alertname`. */
export function groupingLabels(config: MonitoringConfig): string[] {
  return config.clusterLabel ? ['backend', config.clusterLabel] : ['backend'];
}

const DURATION_UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };

/** `1h30m` → 5400: for comparing and adding Prometheus durations. */
export function durationSeconds(value: string): number {
  return [...value.matchAll(/(\d+)(ms|[smhdwy])/g)].reduce((total, [, n, unit]) => total + Number(n) * DURATION_UNIT_SECONDS[unit!]!, 0);
}

/** `30m` → `30 minutes`, for alert text that says how long a condition has held. */
export function humanDuration(value: string): string {
  const units: Record<string, [string, number]> = {
    ms: ['millisecond', 0.001], s: ['second', 1], m: ['minute', 60], h: ['hour', 3600], d: ['day', 86400], w: ['week', 604800], y: ['year', 31536000],
  };
  const parts = [...value.matchAll(/(\d+)(ms|[smhdwy])/g)];
  return parts.map(([, n, unit]) => `${n} ${units[unit!]![0]}${n === '1' ? '' : 's'}`).join(' ');
}

/** Seconds as the largest exact unit in words: 3600 → `1 hour`, 90 → `90 seconds`. */
export function humanSeconds(seconds: number): string {
  for (const [unit, size] of [['day', 86400], ['hour', 3600], ['minute', 60]] as const) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size} ${unit}${seconds === size ? '' : 's'}`;
  }
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
}
