/**
 * What a history proves about each session and each grant, derived from the
 * history alone. Every bound here leans towards the system under test: an
 * interval a grant is "certainly held" over is one where every assignment of
 * the operations' effect instants (each inside its invoke..complete window, an
 * unknown one anywhere after its invoke, or never) keeps the grant live. A
 * rule that finds two such intervals overlapping has found a real violation,
 * whatever the unknowns were; that is what keeps the checker free of false alarms.
 *
 * Two views are kept: `certain` treats every operation that may have ended a
 * hold (a release, close, kill or revoke whose answer is ok or unknown) as
 * having done so at its invoke; `acked` counts only the ending operations
 * that were answered ok. A pair that overlaps in `acked` but not in `certain`
 * is safe only if an unanswered operation took effect: the checker calls that
 * indeterminate unless other answers settle it.
 */
import { grantKind, isMutex, type GrantMode, type HistoryOp } from '../format.js';

export interface CheckOptions {
  /**
   * Taken off every TTL-derived bound: the store's clock and the test's may tick at slightly
   * different rates, and stores keep instants in whole milliseconds.
   */
  slackMillis: number;
  /**
   * An unanswered operation takes effect, if at all, within this long of its invoke. Infinity (the
   * default) assumes nothing: an unanswered blind revoke then may end every later grant of its key.
   * A harness that bounds how long a request can survive (its proxies drop or delay by a bounded
   * time, paused servers are resumed, store calls time out) may pass its bound.
   */
  unknownEffectWithinMillis: number;
}

export const DEFAULT_OPTIONS: CheckOptions = { slackMillis: 25, unknownEffectWithinMillis: Infinity };

/** One bound with the operation that set it, so a counterexample can say why. */
export interface Bound {
  at: number;
  /** Index of the operation the bound comes from. */
  op: number;
  why: string;
}

export interface SessionFacts {
  sessionId: string;
  ttlMillis: number;
  opened: number;
  /** The session is certainly live up to here (from its open until then), in each view. */
  certainEnd: Bound;
  ackedEnd: Bound;
  /** The earliest close or kill that may have ended it (ok or unknown), if any. */
  cut?: Bound;
}

export interface GrantFacts {
  token: string;
  value: bigint;
  key: string;
  sessionId: string;
  /** `exclusive` with limit 1: the mutex rules judge it. */
  mutex: boolean;
  mode: GrantMode;
  /** The holder count its acquire named (a semaphore's N; 1 for a mutex or a shared hold). */
  limit: number;
  ttlMillis: number;
  /** Earliest instant the grant may have been made: the invoke of the first L4 that could have made it. */
  createLo: Bound;
  /** The grant certainly existed by here: the first ok answer carrying its token. */
  createHi: Bound;
  certainEnd: Bound;
  ackedEnd: Bound;
  /** The earliest operation that may have ended it (its release, a revoke, its session's close or kill), if any. */
  cut?: Bound;
  /** Every operation about this grant (L4s that answered it, renewals, releases, reads showing it). */
  ops: number[];
}

/**
 * A grant is named by key and token: tokens are meant to be unique across keys, but a build that
 * reuses them (token-reused) must still be judged key by key, not have two grants merged into one.
 */
export const grantId = (key: string, token: string) => `${key}\u0000${token}`;

export interface Model {
  ops: HistoryOp[];
  sessions: Map<string, SessionFacts>;
  /** By grantId. */
  grants: Map<string, GrantFacts>;
  /** Answers that say the grant was gone (LOCK_LOST, a read showing another holder), by grantId. */
  goneEvidence: Map<string, HistoryOp[]>;
  /** Session-scoped answers of 404 SESSION_NOT_FOUND, by session. */
  sessionGoneEvidence: Map<string, HistoryOp[]>;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : typeof v === 'string' && v !== '' ? Number(v) : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined);

function later(a: Bound, b: Bound): Bound {
  return b.at > a.at ? b : a;
}
function earlier(a: Bound, b: Bound): Bound {
  return b.at < a.at ? b : a;
}

export function tokenOf(op: HistoryOp): string | undefined {
  return str(op.result?.fencingToken) ?? str(op.args.fencingToken);
}

/** An operation may have taken effect unless it was definitely refused. */
const mayHaveApplied = (op: HistoryOp) => op.outcome !== 'fail';

/**
 * An ending operation (release, close, kill) may have ended its grant or session unless it was refused
 * for another reason than "already gone". That refusal — L6 answered LOCK_LOST, L3 answered
 * SESSION_NOT_FOUND — proves nothing was left to end when it was decided, not that this request ended
 * nothing: C3 answers it for a lock or session already released or closed, and the server may have done
 * that itself, in an earlier try of this very request whose store answer was lost (the etcd store re-sends
 * a txn after a broken connection; the repeat fails its compare and the re-read finds the thing gone).
 */
const answeredGone = (op: HistoryOp) => (op.f === 'release' && op.error?.code === 'LOCK_LOST') || (op.f === 'close' && op.error?.code === 'SESSION_NOT_FOUND');
const mayHaveEnded = (op: HistoryOp) => mayHaveApplied(op) || answeredGone(op);
/** The answer says the thing is ended by now (by this request or before it): the acknowledged view counts it. */
const endAcknowledged = (op: HistoryOp) => op.outcome === 'ok' || answeredGone(op);

const endedWhy = (op: HistoryOp) => `${op.f} invoked (${op.outcome}${op.error?.code ? ` ${op.error.code}` : ''})`;

export function buildModel(ops: HistoryOp[], options: CheckOptions = DEFAULT_OPTIONS): Model {
  const slack = options.slackMillis;
  const within = options.unknownEffectWithinMillis;
  const opAt = new Map(ops.map((op) => [op.index, op]));
  const byIndex = [...ops].sort((a, b) => a.index - b.index);
  const sessions = new Map<string, SessionFacts>();
  const grants = new Map<string, GrantFacts>();
  const goneEvidence = new Map<string, HistoryOp[]>();
  const sessionGoneEvidence = new Map<string, HistoryOp[]>();
  const push = <T>(map: Map<string, T[]>, k: string, v: T) => map.set(k, [...(map.get(k) ?? []), v]);

  // Sessions: live from L1 by their TTL, extended by each acknowledged heartbeat from its invoke.
  const sessionOps = new Map<string, HistoryOp[]>();
  for (const op of byIndex) {
    // L1 names its session in the answer, L7 names the holder's; the rest act as or on op.sessionId.
    const id = op.f === 'open' || op.f === 'read' ? str(op.result?.sessionId) : op.sessionId;
    if (id !== undefined && op.f !== 'write') push(sessionOps, id, op);
  }
  for (const [sessionId, list] of sessionOps) {
    const open = list.find((op) => op.f === 'open' && op.outcome === 'ok');
    if (!open) continue;
    const ttl = num(open.result?.ttlMillis) ?? num(open.args.ttlMillis) ?? 15_000;
    let extended: Bound = { at: open.invokeAt + ttl - slack, op: open.index, why: 'opened (invoke + session TTL)' };
    let proven: Bound = { at: open.completeAt, op: open.index, why: 'open answered' };
    let certainCut: Bound = { at: Infinity, op: -1, why: 'never ended' };
    let ackedCut: Bound = certainCut;
    for (const op of list) {
      if (op.f === 'heartbeat' && op.outcome === 'ok') {
        extended = later(extended, { at: op.invokeAt + ttl - slack, op: op.index, why: 'heartbeat acknowledged (invoke + session TTL)' });
      }
      // An acknowledged session-scoped call proves the session was live when it took effect (after its invoke).
      if (op.outcome === 'ok' && ['heartbeat', 'acquire', 'renew', 'release'].includes(op.f)) {
        proven = later(proven, { at: op.invokeAt, op: op.index, why: `${op.f} acknowledged: live when it took effect` });
      }
      if (op.f === 'read' && op.outcome === 'ok' && op.result?.held === true) {
        proven = later(proven, { at: op.invokeAt, op: op.index, why: 'read showed it holding' });
      }
      if ((op.f === 'close' || op.f === 'kill') && mayHaveEnded(op)) {
        certainCut = earlier(certainCut, { at: op.invokeAt, op: op.index, why: endedWhy(op) });
        if (endAcknowledged(op)) ackedCut = earlier(ackedCut, { at: op.invokeAt, op: op.index, why: endedWhy(op) });
      }
      if (op.outcome === 'fail' && op.error?.code === 'SESSION_NOT_FOUND') push(sessionGoneEvidence, sessionId, op);
    }
    sessions.set(sessionId, {
      sessionId,
      ttlMillis: ttl,
      opened: open.index,
      certainEnd: later(earlier(extended, certainCut), proven),
      ackedEnd: later(earlier(extended, ackedCut), proven),
      ...(certainCut.op >= 0 ? { cut: certainCut } : {}),
    });
  }

  // Grants: one per token an acquire answered.
  const acquiresBySessionKey = new Map<string, HistoryOp[]>();
  for (const op of byIndex) if (op.f === 'acquire' && op.sessionId && op.key) push(acquiresBySessionKey, `${op.sessionId}\u0000${op.key}`, op);
  for (const op of byIndex) {
    if (op.f !== 'acquire' || op.outcome !== 'ok') continue;
    const token = tokenOf(op);
    if (token === undefined || !op.key || !op.sessionId) continue;
    const known = grants.get(grantId(op.key, token));
    if (known) {
      known.ops.push(op.index);
      if (op.completeAt < known.createHi.at) known.createHi = { at: op.completeAt, op: op.index, why: 'first answer with this token' };
      continue;
    }
    grants.set(grantId(op.key, token), {
      token,
      value: BigInt(token),
      key: op.key,
      sessionId: op.sessionId,
      mutex: isMutex(op),
      ...grantKind(op),
      ttlMillis: num(op.result?.ttlMillis) ?? num(op.args.ttlMillis) ?? 30_000,
      createLo: { at: op.invokeAt, op: op.index, why: 'acquire invoked' },
      createHi: { at: op.completeAt, op: op.index, why: 'first answer with this token' },
      certainEnd: { at: Infinity, op: -1, why: '' },
      ackedEnd: { at: Infinity, op: -1, why: '' },
      ops: [op.index],
    });
  }

  const byKeyOps = new Map<string, HistoryOp[]>();
  for (const op of byIndex) if (op.key !== undefined) push(byKeyOps, op.key, op);

  for (const grant of grants.values()) {
    // Any earlier L4 of this session on this key that may have been applied could have made this grant
    // (an answer lost, then a retry told "your existing grant"): the TTL may run from the earliest of them.
    for (const op of acquiresBySessionKey.get(`${grant.sessionId}\u0000${grant.key}`) ?? []) {
      // An unanswered L4 whose grant (unrenewable: nobody knew its token) would have lapsed before the first
      // answer naming this token was even asked for cannot have made it.
      const firstAsked = opAt.get(grant.createHi.op)!.invokeAt;
      const reach = op.invokeAt + within + (num(op.args.ttlMillis) ?? grant.ttlMillis);
      const candidate = (op.outcome === 'unknown' && reach >= firstAsked) || (op.outcome === 'ok' && tokenOf(op) === grant.token);
      if (candidate && op.invokeAt < grant.createLo.at && op.invokeAt <= grant.createHi.at) {
        grant.createLo = { at: op.invokeAt, op: op.index, why: op.outcome === 'unknown' ? 'an unanswered acquire of this session may have made it' : 'acquire invoked' };
      }
    }
    const keyOps = byKeyOps.get(grant.key) ?? [];
    const renewals = keyOps.filter((op) => op.f === 'renew' && op.sessionId === grant.sessionId && str(op.args.fencingToken) === grant.token);
    const ttlOf = (op: HistoryOp) => num(op.result?.ttlMillis) ?? num(op.args.ttlMillis) ?? grant.ttlMillis;
    const mayApply = renewals.filter(mayHaveApplied);
    let ttlEnd: Bound;
    if (mayApply.every((op) => ttlOf(op) === grant.ttlMillis)) {
      // One TTL throughout: expiry only moves later, so each acknowledged renewal extends from its invoke.
      ttlEnd = { at: grant.createLo.at + grant.ttlMillis - slack, op: grant.createLo.op, why: 'granted (earliest invoke + TTL)' };
      for (const op of renewals) {
        if (op.outcome === 'ok') ttlEnd = later(ttlEnd, { at: op.invokeAt + grant.ttlMillis - slack, op: op.index, why: 'renewal acknowledged (invoke + TTL)' });
      }
    } else {
      // A renewal with another TTL may shorten the lock: only the smallest possible expiry is certain.
      ttlEnd = { at: grant.createLo.at + grant.ttlMillis - slack, op: grant.createLo.op, why: 'granted (earliest invoke + TTL)' };
      for (const op of mayApply) ttlEnd = earlier(ttlEnd, { at: op.invokeAt + ttlOf(op) - slack, op: op.index, why: 'a renewal with another TTL (invoke + its TTL)' });
    }
    let proven: Bound = grant.createHi;
    let certainCut: Bound = { at: Infinity, op: -1, why: '' };
    let ackedCut: Bound = certainCut;
    for (const op of keyOps) {
      let ends = false;
      if (op.f === 'release' && op.sessionId === grant.sessionId && str(op.args.fencingToken) === grant.token) ends = mayHaveEnded(op);
      if (op.f === 'revoke') {
        const expected = str(op.args.expectedFencingToken);
        if (op.outcome === 'ok') ends = op.result?.outcome === 'REVOKED' && str(op.result?.revokedFencingToken) === grant.token;
        else if (op.outcome === 'unknown') ends = expected === undefined || expected === grant.token;
      }
      // An unanswered one can only end a grant that may have existed while it could still take effect.
      if (ends && op.outcome === 'unknown' && op.invokeAt + within < grant.createLo.at) ends = false;
      if (ends) {
        certainCut = earlier(certainCut, { at: op.invokeAt, op: op.index, why: endedWhy(op) });
        if (endAcknowledged(op)) ackedCut = earlier(ackedCut, { at: op.invokeAt, op: op.index, why: endedWhy(op) });
      }
      const shows = op.f === 'read' && op.outcome === 'ok' ? str(op.result?.fencingToken) : undefined;
      if (op.outcome === 'ok' && ((op.f === 'renew' && str(op.args.fencingToken) === grant.token) || shows === grant.token)) {
        proven = later(proven, { at: op.invokeAt, op: op.index, why: `${op.f} ${op.f === 'read' ? 'showed it held' : 'acknowledged'}: live when it took effect` });
        grant.ops.push(op.index);
      }
      if (op.f === 'renew' && op.outcome !== 'ok' && str(op.args.fencingToken) === grant.token) grant.ops.push(op.index);
      if (op.f === 'release' && str(op.args.fencingToken) === grant.token) grant.ops.push(op.index);
      const saysGone =
        ((op.f === 'renew' || op.f === 'release') && op.outcome === 'fail' && op.error?.code === 'LOCK_LOST' && str(op.args.fencingToken) === grant.token) ||
        // A read counts only once the grant certainly existed: before that, "not held" says nothing. And only
        // for a mutex: a read names one holder (the lowest token), so beside other holders it says nothing.
        (grant.mutex && op.f === 'read' && op.outcome === 'ok' && op.invokeAt > grant.createHi.at && shows !== grant.token);
      if (saysGone) push(goneEvidence, grantId(grant.key, grant.token), op);
    }
    const session = sessions.get(grant.sessionId);
    const sessionCertain = session?.certainEnd ?? { at: -Infinity, op: -1, why: 'session never seen opened' };
    const sessionAcked = session?.ackedEnd ?? sessionCertain;
    grant.certainEnd = earlier(later(earlier(ttlEnd, certainCut), proven), withWhy(sessionCertain, 'session'));
    grant.ackedEnd = earlier(later(earlier(ttlEnd, ackedCut), proven), withWhy(sessionAcked, 'session'));
    const cut = session?.cut ? earlier(certainCut, withWhy(session.cut, 'session')) : certainCut;
    if (cut.op >= 0) grant.cut = cut;
    grant.ops.sort((a, b) => a - b);
    grant.ops = [...new Set(grant.ops)];
  }
  return { ops: byIndex, sessions, grants, goneEvidence, sessionGoneEvidence };
}

function withWhy(bound: Bound, prefix: string): Bound {
  return { ...bound, why: `${prefix}: ${bound.why}` };
}

/** The mutex grants (exclusive, limit 1) of each key: what the mutex-only rules judge. */
export function mutexGrantsByKey(model: Pick<Model, 'grants'>): Map<string, GrantFacts[]> {
  const byKey = new Map<string, GrantFacts[]>();
  for (const grant of model.grants.values()) if (grant.mutex) byKey.set(grant.key, [...(byKey.get(grant.key) ?? []), grant]);
  return byKey;
}

/** The interval a grant was certainly held over, or undefined when it is empty. */
export function heldInterval(grant: GrantFacts, view: 'certain' | 'acked'): [number, number] | undefined {
  const end = view === 'certain' ? grant.certainEnd.at : grant.ackedEnd.at;
  return end > grant.createHi.at ? [grant.createHi.at, end] : undefined;
}
