/**
 * A release (L6, compare-and-delete) can only succeed on a live grant. On a mutex key a
 * higher token means a later grant, and a later grant means the earlier one had ended
 * (rule 1); so a release of token t acknowledged though it was invoked after a higher
 * token on the same key was certainly made released something that was no longer t's:
 * a stale holder deleted whoever held the key then. A renewal acknowledged so late needs
 * no rule of its own: it makes t certainly held beside the later grant (mutex-overlap).
 */
import type { Finding } from './findings.js';
import { grantId, mutexGrantsByKey, type Model } from './model.js';
import { describe, ms } from './mutex.js';

export function checkSupersededReleases(model: Model): Finding[] {
  const findings: Finding[] = [];
  const mutexByKey = mutexGrantsByKey(model);
  for (const op of model.ops) {
    if (op.f !== 'release' || op.outcome !== 'ok' || op.key === undefined) continue;
    const released = model.grants.get(grantId(op.key, String(op.args.fencingToken)));
    if (!released?.mutex) continue;
    const later = (mutexByKey.get(op.key) ?? [])
      .filter((g) => g.value > released.value && g.createHi.at < op.invokeAt)
      .sort((a, b) => a.createHi.at - b.createHi.at)[0];
    if (!later) continue;
    findings.push({
      rule: 'superseded-release',
      verdict: 'violation',
      key: op.key,
      message: `a release of token ${released.token} on ${JSON.stringify(op.key)} was acknowledged at ${ms(op.completeAt)}, though token ${later.token} had certainly been granted on that key by ${ms(later.createHi.at)}, before the release was sent`,
      ops: [released.createHi.op, later.createHi.op, op.index].filter((i, k, all) => i >= 0 && all.indexOf(i) === k).sort((a, b) => a - b),
      window: [later.createHi.at, op.completeAt],
      reasons: [...describe(released), ...describe(later)],
    });
  }
  return findings;
}
