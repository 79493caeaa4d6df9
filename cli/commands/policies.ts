/** `holdfast policies ls`: the lock policies the server enforces now (A8, viewer; HOLDFAST_POLICIES_FILE). */
import type { Command } from 'commander';
import type { LockPolicy } from '../../contract/policies.js';
import type { CliContext } from '../context.js';
import { formatTable } from '../format.js';

/** 3600000 → `1h`, 90000 → `90s`: the largest whole unit; `-o wide` shows milliseconds. */
function millis(value: number | undefined, wide: boolean): string {
  if (value === undefined) return '-';
  if (wide) return String(value);
  for (const [unit, size] of [['h', 3_600_000], ['m', 60_000], ['s', 1_000]] as const) {
    if (value % size === 0) return `${value / size}${unit}`;
  }
  return `${value}ms`;
}

export function policiesTable(policies: readonly LockPolicy[], wide: boolean): string {
  if (policies.length === 0) return 'no lock policies (the server has no HOLDFAST_POLICIES_FILE, or it is empty)';
  const ms = wide ? ' (MS)' : '';
  return formatTable(
    ['NAME', 'PREFIX', `MAX HOLD${ms}`, `MAX TTL${ms}`, `DEFAULT TTL${ms}`, 'MAX WAITERS'],
    policies.map((policy) => [
      policy.name,
      policy.prefix,
      millis(policy.maxHoldMillis, wide),
      millis(policy.maxTtlMillis, wide),
      millis(policy.defaultTtlMillis, wide),
      policy.maxWaiters === undefined ? '-' : String(policy.maxWaiters),
    ]),
  );
}

export function registerPolicies(program: Command, ctx: CliContext): void {
  const policies = program.command('policies').description('per-prefix lock policies (HOLDFAST_POLICIES_FILE)');
  policies
    .command('ls')
    .description('the lock policies in force, in file order; a key is under the one with the longest prefix it starts with (viewer)')
    .action(async () => {
      const { items } = await (await ctx.api()).policies();
      ctx.print(items, (wide) => policiesTable(items, wide));
    });
}
