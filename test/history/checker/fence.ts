/**
 * The fenced resource, per key: a write accepted after another accepted write
 * had completed never carries a lower token; and a write made while its own
 * grant was certainly held is never refused (a refusal means a higher token
 * was already written, so another grant was made while this one was held) —
 * the latter for mutex grants only: other kinds have holders side by side.
 */
import type { HistoryOp } from '../format.js';
import type { Finding } from './findings.js';
import { grantId, heldInterval, type Model } from './model.js';
import { describe, ms } from './mutex.js';

const tokenValue = (op: HistoryOp) => BigInt(String(op.args.fencingToken));

export function checkFence(model: Model): Finding[] {
  const findings: Finding[] = [];
  const writes = model.ops.filter((op) => op.f === 'write' && op.outcome === 'ok' && op.key !== undefined);
  const byKey = new Map<string, HistoryOp[]>();
  for (const op of writes) byKey.set(op.key!, [...(byKey.get(op.key!) ?? []), op]);
  for (const [key, list] of byKey) {
    const accepted = list.filter((op) => op.result?.accepted === true);
    const byInvoke = [...accepted].sort((a, b) => a.invokeAt - b.invokeAt);
    const byComplete = [...accepted].sort((a, b) => a.completeAt - b.completeAt);
    let highest: HistoryOp | undefined;
    let i = 0;
    for (const w of byInvoke) {
      while (i < byComplete.length && byComplete[i]!.completeAt < w.invokeAt) {
        const done = byComplete[i]!;
        if (!highest || tokenValue(done) > tokenValue(highest)) highest = done;
        i += 1;
      }
      if (highest && tokenValue(w) < tokenValue(highest)) {
        findings.push({
          rule: 'fence-regression',
          verdict: 'violation',
          key,
          message: `key ${JSON.stringify(key)}: the resource accepted token ${String(w.args.fencingToken)} at ${ms(w.invokeAt)} after it had accepted ${String(highest.args.fencingToken)} at ${ms(highest.completeAt)}`,
          ops: [highest.index, w.index],
          window: [highest.invokeAt, w.completeAt],
          reasons: [],
        });
      }
    }
    for (const w of list) {
      if (w.result?.accepted !== false) continue;
      const grant = model.grants.get(grantId(key, String(w.args.fencingToken)));
      const held = grant && heldInterval(grant, 'certain');
      // Only a mutex holder is owed acceptance: a semaphore's or shared holders write beside each other.
      if (!grant || !grant.mutex || !held || !(held[0] <= w.invokeAt && w.completeAt <= held[1])) continue;
      findings.push({
        rule: 'fence-refused-live-holder',
        verdict: 'violation',
        key,
        message: `key ${JSON.stringify(key)}: the resource refused token ${grant.token} at ${ms(w.invokeAt)} while that grant was certainly held (a higher token had been written: another grant overlapped it)`,
        ops: [grant.createHi.op, w.index],
        window: [held[0], w.completeAt],
        reasons: describe(grant),
      });
    }
  }
  return findings;
}
