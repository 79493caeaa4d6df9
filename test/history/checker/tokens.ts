/**
 * Fencing tokens, across every key: a grant certainly made before another
 * could have been made (its first answer completed before the other's earliest
 * possible L4 was invoked) carries the lower token; and one token is never
 * answered for two different grants (another key or another session).
 */
import type { HistoryOp } from '../format.js';
import type { Finding } from './findings.js';
import { tokenOf, type GrantFacts, type Model } from './model.js';
import { describe, ms } from './mutex.js';

export function checkTokenOrder(model: Model): Finding[] {
  const findings: Finding[] = [];
  const grants = [...model.grants.values()];
  const byMade = [...grants].sort((a, b) => a.createHi.at - b.createHi.at);
  const byEarliest = [...grants].sort((a, b) => a.createLo.at - b.createLo.at);
  let highest: GrantFacts | undefined;
  let i = 0;
  for (const b of byEarliest) {
    while (i < byMade.length && byMade[i]!.createHi.at < b.createLo.at) {
      const a = byMade[i]!;
      if (!highest || a.value > highest.value) highest = a;
      i += 1;
    }
    if (highest && highest.value >= b.value) {
      findings.push({
        rule: 'token-order',
        verdict: 'violation',
        key: b.key,
        message: `token ${b.token} (key ${JSON.stringify(b.key)}) was made after token ${highest.token} (key ${JSON.stringify(highest.key)}) was answered at ${ms(highest.createHi.at)}, yet is not higher`,
        ops: [highest.createHi.op, b.createLo.op, b.createHi.op].filter((x, k, all) => all.indexOf(x) === k).sort((x, y) => x - y),
        window: [highest.createHi.at, b.createHi.at],
        reasons: [...describe(highest), ...describe(b)],
      });
    }
  }
  return findings;
}

export function checkTokenReuse(model: Model): Finding[] {
  const findings: Finding[] = [];
  const first = new Map<string, HistoryOp>();
  for (const op of model.ops) {
    if (op.f !== 'acquire' || op.outcome !== 'ok') continue;
    const token = tokenOf(op);
    if (token === undefined) continue;
    const seen = first.get(token);
    if (!seen) {
      first.set(token, op);
      continue;
    }
    if (seen.key !== op.key || seen.sessionId !== op.sessionId) {
      findings.push({
        rule: 'token-reused',
        verdict: 'violation',
        key: op.key,
        message: `token ${token} was answered for ${JSON.stringify(seen.key)} (session ${seen.sessionId}) and again for ${JSON.stringify(op.key)} (session ${op.sessionId})`,
        ops: [seen.index, op.index],
        window: [seen.invokeAt, op.completeAt],
        reasons: [],
      });
    }
  }
  return findings;
}
