/**
 * Acknowledged state is never lost:
 * - a grant certainly held across a whole read (L7) is what the read shows;
 * - a renewal or release of a grant certainly held across the call is not answered LOCK_LOST;
 * - a session certainly live across a call is not answered SESSION_NOT_FOUND;
 * - after a release, revoke, close or kill was answered ok, no later read shows the
 *   grant it ended and no later renewal of it is answered ok.
 */
import type { HistoryOp } from '../format.js';
import type { Finding } from './findings.js';
import { grantId, heldInterval, mutexGrantsByKey, tokenOf, type GrantFacts, type Model } from './model.js';
import { describe, ms } from './mutex.js';

const inside = (held: [number, number] | undefined, op: HistoryOp) => held !== undefined && held[0] <= op.invokeAt && op.completeAt <= held[1];

export function checkLost(model: Model): Finding[] {
  return [...lostGrants(model), ...lostSessions(model), ...lostReleases(model)];
}

function lostGrants(model: Model): Finding[] {
  const findings: Finding[] = [];
  const byKey = mutexGrantsByKey(model);
  for (const op of model.ops) {
    if (op.key === undefined) continue;
    if (op.f === 'read' && op.outcome === 'ok') {
      const shows = op.result?.held === true ? String(op.result?.fencingToken) : 'nothing';
      for (const g of byKey.get(op.key) ?? []) {
        if (shows === g.token || !inside(heldInterval(g, 'certain'), op)) continue;
        findings.push(lost(g, op, `a read of ${JSON.stringify(op.key)} during [${ms(op.invokeAt)}, ${ms(op.completeAt)}] showed ${shows === 'nothing' ? 'it free' : `token ${shows}`} while token ${g.token} was certainly held`));
      }
    }
    if ((op.f === 'renew' || op.f === 'release') && op.outcome === 'fail' && op.error?.code === 'LOCK_LOST') {
      const g = model.grants.get(grantId(op.key, String(op.args.fencingToken)));
      if (g && inside(heldInterval(g, 'certain'), op)) {
        findings.push(lost(g, op, `${op.f} of token ${g.token} was answered LOCK_LOST during [${ms(op.invokeAt)}, ${ms(op.completeAt)}] while it was certainly held`));
      }
    }
  }
  return findings;
}

function lost(g: GrantFacts, op: HistoryOp, message: string): Finding {
  return {
    rule: 'lost-grant',
    verdict: 'violation',
    key: g.key,
    message,
    ops: [...new Set([g.createLo.op, g.createHi.op, g.certainEnd.op, op.index].filter((i) => i >= 0))].sort((a, b) => a - b),
    window: [op.invokeAt, op.completeAt],
    reasons: describe(g),
  };
}

function lostSessions(model: Model): Finding[] {
  const findings: Finding[] = [];
  for (const [sessionId, evidence] of model.sessionGoneEvidence) {
    const session = model.sessions.get(sessionId);
    if (!session) continue;
    const opened = model.ops.find((op) => op.index === session.opened)!;
    const live: [number, number] = [opened.completeAt, session.certainEnd.at];
    for (const op of evidence) {
      if (!inside(live[1] > live[0] ? live : undefined, op)) continue;
      findings.push({
        rule: 'lost-session',
        verdict: 'violation',
        message: `session ${sessionId}: ${op.f} was answered SESSION_NOT_FOUND during [${ms(op.invokeAt)}, ${ms(op.completeAt)}] while the session was certainly live until ${ms(live[1])}`,
        ops: [session.opened, session.certainEnd.op, op.index].filter((i, k, all) => i >= 0 && all.indexOf(i) === k).sort((a, b) => a - b),
        window: [op.invokeAt, op.completeAt],
        reasons: [`session certainly live until ${ms(live[1])} (op #${session.certainEnd.op}: ${session.certainEnd.why})`],
      });
    }
  }
  return findings;
}

function lostReleases(model: Model): Finding[] {
  const findings: Finding[] = [];
  // The first acknowledged end of each grant: a release of its token, a revoke that names it, a close or kill of its session.
  const ended = new Map<string, HistoryOp>();
  const note = (id: string, op: HistoryOp) => {
    const seen = ended.get(id);
    if (!seen || op.completeAt < seen.completeAt) ended.set(id, op);
  };
  for (const op of model.ops) {
    if (op.outcome !== 'ok') continue;
    if (op.key === undefined && op.f !== 'close' && op.f !== 'kill') continue;
    if (op.f === 'release') note(grantId(op.key!, String(op.args.fencingToken)), op);
    if (op.f === 'revoke' && op.result?.outcome === 'REVOKED') note(grantId(op.key!, String(op.result.revokedFencingToken)), op);
    if (op.f === 'close' || op.f === 'kill') {
      for (const g of model.grants.values()) if (g.sessionId === op.sessionId && g.createLo.at < op.completeAt) note(grantId(g.key, g.token), op);
    }
  }
  for (const op of model.ops) {
    if (op.outcome !== 'ok') continue;
    const token = op.f === 'read' ? (op.result?.held === true ? String(op.result.fencingToken) : undefined) : op.f === 'renew' ? tokenOf(op) : undefined;
    if (token === undefined || op.key === undefined) continue;
    const end = ended.get(grantId(op.key, token));
    if (!end || op.invokeAt <= end.completeAt) continue;
    findings.push({
      rule: 'lost-release',
      verdict: 'violation',
      key: op.key,
      message: `token ${token} was ended by ${end.f} (op #${end.index}, acknowledged at ${ms(end.completeAt)}), yet ${op.f === 'read' ? 'a later read showed it held' : 'a later renewal was acknowledged'} at ${ms(op.invokeAt)}`,
      ops: [end.index, op.index],
      window: [end.invokeAt, op.completeAt],
      reasons: [],
    });
  }
  return findings;
}
