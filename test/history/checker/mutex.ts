/**
 * Mutual exclusion in real time, per key, for mutex grants: two grants whose
 * certainly-held intervals (model.ts) overlap is a violation. A pair that
 * overlaps only when unanswered ending operations are taken as not applied is
 * indeterminate, unless an answer shows one side already gone early enough
 * (a LOCK_LOST, a read naming another holder, a SESSION_NOT_FOUND).
 */
import type { Finding } from './findings.js';
import { grantId, heldInterval, type Bound, type GrantFacts, type Model } from './model.js';

export function checkMutex(model: Model): Finding[] {
  const findings: Finding[] = [];
  const byKey = new Map<string, GrantFacts[]>();
  for (const grant of model.grants.values()) {
    if (!grant.mutex || heldInterval(grant, 'acked') === undefined) continue;
    byKey.set(grant.key, [...(byKey.get(grant.key) ?? []), grant]);
  }
  for (const [key, list] of byKey) {
    list.sort((a, b) => a.createHi.at - b.createHi.at);
    // Sweep by start; the acked end is never before the certain one, so it bounds both views.
    let active: GrantFacts[] = [];
    for (const b of list) {
      active = active.filter((a) => a.ackedEnd.at > b.createHi.at);
      for (const a of active) {
        const finding = classify(model, key, a, b);
        if (finding) findings.push(finding);
      }
      active.push(b);
    }
  }
  return findings;
}

function classify(model: Model, key: string, a: GrantFacts, b: GrantFacts): Finding | undefined {
  const start = b.createHi.at; // a started no later (sorted)
  const certainEnd = Math.min(a.certainEnd.at, b.certainEnd.at);
  const ackedEnd = Math.min(a.ackedEnd.at, b.ackedEnd.at);
  const reasons = [...describe(a), ...describe(b)];
  const ops = [...new Set([a.createLo.op, a.createHi.op, a.certainEnd.op, b.createLo.op, b.createHi.op, b.certainEnd.op].filter((i) => i >= 0))].sort((x, y) => x - y);
  if (start < certainEnd) {
    return {
      rule: 'mutex-overlap',
      verdict: 'violation',
      key,
      message: `key ${JSON.stringify(key)}: tokens ${a.token} (session ${a.sessionId}) and ${b.token} (session ${b.sessionId}) were both certainly held during [${ms(start)}, ${ms(certainEnd)}]`,
      ops,
      window: [start, certainEnd],
      reasons,
    };
  }
  if (start < ackedEnd && !settled(model, a, b) && !settled(model, b, a)) {
    const cuts = [a, b].filter((g) => g.certainEnd.at < g.ackedEnd.at && g.cut);
    const cut = cuts.map((g) => `${g.token} may have ended at ${ms(g.cut!.at)} by op #${g.cut!.op} (${g.cut!.why})`);
    return {
      rule: 'mutex-overlap',
      verdict: 'indeterminate',
      key,
      message: `key ${JSON.stringify(key)}: tokens ${a.token} and ${b.token} overlap during [${ms(start)}, ${ms(ackedEnd)}] unless an unanswered operation ended one first: ${cut.join('; ')}`,
      ops: [...new Set([...ops, a.ackedEnd.op, b.ackedEnd.op, ...cuts.map((g) => g.cut!.op)].filter((i) => i >= 0))].sort((x, y) => x - y),
      window: [start, ackedEnd],
      reasons,
    };
  }
  return undefined;
}

/** An answer shows `gone` ended before `other` was certainly made: the overlap never happened. */
export function settled(model: Model, gone: GrantFacts, other: GrantFacts): boolean {
  const evidence = [...(model.goneEvidence.get(grantId(gone.key, gone.token)) ?? []), ...(model.sessionGoneEvidence.get(gone.sessionId) ?? [])];
  return evidence.some((op) => op.invokeAt >= gone.createLo.at && op.completeAt <= other.createHi.at);
}

export function describe(g: GrantFacts): string[] {
  const line = (label: string, b: Bound) => `  ${label} ${ms(b.at)}${b.op >= 0 ? ` (op #${b.op}: ${b.why})` : b.why ? ` (${b.why})` : ''}`;
  return [
    `token ${g.token} on ${JSON.stringify(g.key)}, session ${g.sessionId}, TTL ${g.ttlMillis} ms:`,
    line('made no earlier than', g.createLo),
    line('certainly made by', g.createHi),
    line('certainly held until', g.certainEnd),
  ];
}

export const ms = (t: number) => (Number.isFinite(t) ? `${t.toFixed(1)} ms` : t > 0 ? 'the end' : 'never');
