/**
 * The locks page's policy filter (issue 26). A policy is a prefix, less the keys a longer prefix of
 * another policy takes (contract/policies.ts `policyForKey`). So the server narrows by the policy's
 * prefix (A1 `prefix`: its pages and cursors stay server-side, no full scan in the browser), and the
 * page drops only the keys a longer policy claims. "No policy" has no prefix to narrow by: it filters
 * the page the server sent.
 */
import { NO_POLICY, policyForKey, type LockPolicy } from '../../contract/policies';

/** `null`: every lock; `NO_POLICY` (""): keys under no policy; else a policy's name. */
export type PolicyChoice = string | null;

/**
 * The A1 `prefix` for a typed prefix and a chosen policy: the longer of the two when one extends the
 * other; `undefined` when they exclude each other (no key can match both).
 */
export function serverPrefix(typed: string, choice: PolicyChoice, policies: readonly LockPolicy[]): string | undefined {
  const policy = choice ? policies.find((p) => p.name === choice) : undefined;
  if (!policy) return typed;
  if (typed.startsWith(policy.prefix)) return typed;
  if (policy.prefix.startsWith(typed)) return policy.prefix;
  return undefined;
}

/** The rows of a page that are under the chosen policy. */
export function underPolicy<T extends { key: string }>(items: readonly T[], choice: PolicyChoice, policies: readonly LockPolicy[]): T[] {
  if (choice === null) return [...items];
  return items.filter((item) => (policyForKey(policies, item.key)?.name ?? NO_POLICY) === choice);
}

export { NO_POLICY };
