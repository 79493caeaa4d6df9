/**
 * `HoldfastLockHeldTooLong`, per policy (SPEC v3 "teams on one service"): one rule for each policy
 * of the policies file that has a `maxHoldMillis`, with that policy's own threshold, and the generic
 * rule at the configured threshold (1 h) for every other key — `policy=""` (under no policy), policies
 * without a `maxHoldMillis`, and any policy the servers run that this generation did not know of, so a
 * policies file edited without `npm run gen` leaves no key unwatched.
 *
 * A policy's threshold is its `maxHoldMillis` plus the longest TTL a grant under it may have: the
 * server refuses the first renewal past `maxHoldMillis`, and the grant then lives out the TTL its last
 * renewal gave it. Past that, the policy is not being enforced on that key (a server reading another
 * policies file, or an older release in the fleet), which is what the runbook is about.
 */
import { METRICS } from '../contract/metric-table.js';
import type { LockPolicy } from '../contract/policies.js';
import { LOCK_TTL_MILLIS } from '../contract/wire-rules.js';
import { humanDuration, humanSeconds } from './config.js';
import type { AlertingRule } from './define-alert.js';
import { requireLabel } from './promql.js';
import type { RuleContext } from './rule-context.js';

export const LOCK_HELD_TOO_LONG_ALERT = 'HoldfastLockHeldTooLong';

/** Seconds a grant under `policy` may legitimately be held: its maxHoldMillis and one longest TTL. */
export function heldTooLongSeconds(policy: LockPolicy & { maxHoldMillis: number }): number {
  return Math.ceil((policy.maxHoldMillis + (policy.maxTtlMillis ?? LOCK_TTL_MILLIS.max)) / 1000);
}

/** Policy names are bounded to `[A-Za-z0-9_.-]` by the file's rules; only `.` means something in a regex. */
const regexOf = (names: readonly string[]) => names.map((name) => name.replaceAll('.', '\\.')).join('|');

export function lockHeldTooLong(ctx: RuleContext): AlertingRule[] {
  const by = `${ctx.by}, ${requireLabel('policy', METRICS.lockOldestHeldSeconds)}`;
  const limited = ctx.policies.filter((policy): policy is LockPolicy & { maxHoldMillis: number } => policy.maxHoldMillis !== undefined);
  const pending = humanDuration(ctx.pending(LOCK_HELD_TOO_LONG_ALERT));
  // The policy label is the file's, not a closed set of the table: written as a raw matcher.
  const series = (matcher?: string) => ctx.series(METRICS.lockOldestHeldSeconds, matcher ? { raw: [matcher] } : {});
  const generic = ctx.config.thresholds.lockHeldTooLongSeconds;
  return [
    ctx.alert({
      name: LOCK_HELD_TOO_LONG_ALERT,
      action: 'ticket',
      expr: `max by (${by}) (${series(limited.length > 0 ? `policy!~"${regexOf(limited.map((p) => p.name))}"` : undefined)}) > ${generic}`,
      summary: 'A Holdfast lock has been held longer than locks are expected to be held.',
      description:
        `The oldest lock on backend {{ $labels.backend }} has been held for {{ $value | humanizeDuration }} ` +
        `(threshold ${humanSeconds(generic)}, for ${pending}): its holder keeps renewing it, is stuck, or forgot to release it, ` +
        `and everyone waiting for that key is blocked.`,
    }),
    ...limited.map((policy) => {
      const limit = heldTooLongSeconds(policy);
      return ctx.alert({
        name: LOCK_HELD_TOO_LONG_ALERT,
        action: 'ticket',
        expr: `max by (${by}) (${series(`policy="${policy.name}"`)}) > ${limit}`,
        summary: 'A Holdfast lock has been held past its policy’s maxHoldMillis.',
        description:
          `The oldest lock under policy {{ $labels.policy }} (keys ${policy.prefix}…) on backend {{ $labels.backend }} has been held for ` +
          `{{ $value | humanizeDuration }}, past the policy's maxHoldMillis of ${humanSeconds(policy.maxHoldMillis / 1000)} and one last TTL ` +
          `(threshold ${humanSeconds(limit)}, for ${pending}): the servers should have refused its renewal (HOLD_LIMIT_REACHED), ` +
          `so the policy is not in force there, and that team's key stays blocked.`,
        labels: { policy: policy.name },
      });
    }),
  ];
}
