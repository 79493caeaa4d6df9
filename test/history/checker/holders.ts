/**
 * Holders per key, for every kind (SPEC v3): at no instant is a key certainly
 * held by more `exclusive` grants than the smallest limit any of them named (a
 * semaphore never above its limit; holders naming another limit cannot be in
 * at once), nor by a `shared` grant beside an `exclusive` one. The hold rule is
 * the mutex rule's (model.ts): a grant counts over [createHi, certainEnd), so a
 * violation stands whatever the unknown outcomes were; a set that is over only
 * when unanswered ending operations are taken as not applied is indeterminate,
 * unless an answer shows a member gone before the newest member was made.
 * Two mutex grants are left to the mutex rule (mutex.ts), so one overlap is
 * reported once.
 */
import type { Finding, RuleName } from './findings.js';
import { describe, ms, settled } from './mutex.js';
import type { GrantFacts, Model } from './model.js';

interface Conflict {
  rule: RuleName;
  members: GrantFacts[];
  message: string;
}

export function checkHolders(model: Model): Finding[] {
  const findings: Finding[] = [];
  const byKey = new Map<string, GrantFacts[]>();
  for (const grant of model.grants.values()) {
    if (grant.ackedEnd.at <= grant.createHi.at) continue;
    byKey.set(grant.key, [...(byKey.get(grant.key) ?? []), grant]);
  }
  for (const [key, list] of byKey) {
    // Only keys where some grant is not a mutex: two mutexes are the mutex rule's.
    if (list.every((g) => g.mutex)) continue;
    list.sort((a, b) => a.createHi.at - b.createHi.at);
    // The most holders at once are reached at some grant's start: judge the set there, with the newcomer in it.
    let active: GrantFacts[] = [];
    for (const b of list) {
      const t = b.createHi.at;
      active = active.filter((a) => a.ackedEnd.at > t);
      active.push(b);
      const certain = active.filter((g) => g.certainEnd.at > t);
      const found = conflict(key, certain, b);
      if (found) {
        findings.push(finding(found, key, 'violation', t, 'certain'));
        continue;
      }
      const acked = active.filter((g) => g === b || !settled(model, g, b));
      const maybe = conflict(key, acked, b);
      if (maybe) findings.push(finding(maybe, key, 'indeterminate', t, 'acked'));
    }
  }
  return findings;
}

/** What is wrong with `b` joining the holders `set` (b included), as the fewest grants that show it. */
function conflict(key: string, set: GrantFacts[], b: GrantFacts): Conflict | undefined {
  const exclusive = set.filter((g) => g.mode === 'exclusive');
  const shared = set.filter((g) => g.mode === 'shared');
  const other = b.mode === 'shared' ? exclusive[0] : shared[0];
  if (other) {
    const [s, x] = b.mode === 'shared' ? [b, other] : [other, b];
    return {
      rule: 'shared-with-exclusive',
      members: [other, b],
      message: `key ${JSON.stringify(key)}: shared token ${s.token} (session ${s.sessionId}) and exclusive token ${x.token} (session ${x.sessionId}, limit ${x.limit}) were both certainly held`,
    };
  }
  if (b.mode !== 'exclusive' || exclusive.every((g) => g.mutex)) return undefined;
  const tightest = exclusive.reduce((m, g) => (g.limit < m.limit ? g : m));
  if (exclusive.length <= tightest.limit) return undefined;
  // The tightest limit's grant, the newcomer, and the oldest others up to limit + 1 holders.
  const members = [...new Set([tightest, b, ...exclusive])].slice(0, tightest.limit + 1).sort((x, y) => x.createHi.at - y.createHi.at);
  const limits = [...new Set(exclusive.map((g) => g.limit))].sort((x, y) => x - y);
  return {
    rule: 'semaphore-over-limit',
    members,
    message:
      `key ${JSON.stringify(key)}: ${exclusive.length} exclusive grants (limit${limits.length > 1 ? 's' : ''} ${limits.join(', ')}) were certainly held at once, ` +
      `above the limit ${tightest.limit} token ${tightest.token} was granted under: tokens ${members.map((g) => g.token).join(', ')}`,
  };
}

function finding(found: Conflict, key: string, verdict: Finding['verdict'], start: number, view: 'certain' | 'acked'): Finding {
  const end = Math.min(...found.members.map((g) => (view === 'certain' ? g.certainEnd.at : g.ackedEnd.at)));
  const bounds = found.members.flatMap((g) => [g.createLo.op, g.createHi.op, g.certainEnd.op, ...(view === 'acked' ? [g.ackedEnd.op, g.cut?.op ?? -1] : [])]);
  const unanswered = found.members.filter((g) => g.certainEnd.at < g.ackedEnd.at && g.cut).map((g) => `${g.token} may have ended at ${ms(g.cut!.at)} by op #${g.cut!.op} (${g.cut!.why})`);
  return {
    rule: found.rule,
    verdict,
    key,
    message:
      verdict === 'violation'
        ? `${found.message} during [${ms(start)}, ${ms(end)}]`
        : `${found.message.replace('were both certainly held', 'overlap').replace('were certainly held at once', 'overlap')} during [${ms(start)}, ${ms(end)}] unless an unanswered operation ended one first: ${unanswered.join('; ')}`,
    ops: [...new Set(bounds.filter((i) => i >= 0))].sort((x, y) => x - y),
    window: [start, end],
    reasons: found.members.flatMap((g) => describe(g)),
  };
}
