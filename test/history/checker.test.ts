/**
 * The checker on hand-built histories: each rule fires on the smallest history
 * that breaks it, stays quiet on the nearest one that does not (the boundary
 * cases of the conservative bounds included), and says "indeterminate" where
 * the answer hinges on an unanswered operation.
 */
import { describe, expect, test } from 'vitest';
import { check, renderFinding, renderReport } from './checker.js';
import { fromJsonLines, HISTORY_FORMAT, toJsonLines, type History, type HistoryOp } from './format.js';
import { classify, completionOf } from './recording-transport.js';
import { renderTimeline } from './timeline.js';

/** A tiny history builder: times in ms, indexes in the order written. */
function builder() {
  const ops: HistoryOp[] = [];
  const add = (op: Omit<HistoryOp, 'index' | 'args' | 'outcome'> & Partial<Pick<HistoryOp, 'args' | 'outcome'>>) => {
    const full: HistoryOp = { args: {}, outcome: 'ok', ...op, index: ops.length };
    ops.push(full);
    return full;
  };
  return {
    ops,
    open: (process: string, sessionId: string, at: number, ttlMillis = 60_000) =>
      add({ process, f: 'open', sessionId, args: { ttlMillis }, invokeAt: at, completeAt: at + 1, result: { sessionId, ttlMillis } }),
    acquire: (process: string, sessionId: string, key: string, token: string | undefined, invokeAt: number, completeAt: number, ttlMillis = 1_000, extra: Partial<HistoryOp> = {}) =>
      add({
        process,
        f: 'acquire',
        sessionId,
        key,
        args: { ttlMillis },
        invokeAt,
        completeAt,
        ...(token === undefined ? { outcome: 'unknown' as const } : { result: { fencingToken: token, ttlMillis } }),
        ...extra,
      }),
    renew: (process: string, sessionId: string, key: string, token: string, invokeAt: number, completeAt: number, outcome: HistoryOp['outcome'] = 'ok', code?: string) =>
      add({ process, f: 'renew', sessionId, key, args: { fencingToken: token }, invokeAt, completeAt, outcome, ...(outcome === 'ok' ? { result: { fencingToken: token, ttlMillis: 1_000 } } : { error: { status: 409, ...(code ? { code } : {}) } }) }),
    release: (process: string, sessionId: string, key: string, token: string, invokeAt: number, completeAt: number, outcome: HistoryOp['outcome'] = 'ok', code?: string) =>
      add({ process, f: 'release', sessionId, key, args: { fencingToken: token }, invokeAt, completeAt, outcome, ...(code ? { error: { status: 409, code } } : {}) }),
    read: (process: string, key: string, shows: { token: string; sessionId: string } | null, invokeAt: number, completeAt: number) =>
      add({ process, f: 'read', key, invokeAt, completeAt, result: shows ? { held: true, fencingToken: shows.token, sessionId: shows.sessionId } : { held: false } }),
    write: (process: string, key: string, token: string, accepted: boolean, at: number) =>
      add({ process, f: 'write', key, args: { fencingToken: token }, invokeAt: at, completeAt: at, result: { accepted } }),
    add,
  };
}

const rules = (ops: HistoryOp[], verdict: 'violation' | 'indeterminate' = 'violation') => {
  const report = check(ops);
  return (verdict === 'violation' ? report.violations : report.indeterminate).map((f) => f.rule);
};

describe('mutual exclusion', () => {
  test('a release invoked before the next grant: valid', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.open('c2', 'sB', 0);
    h.acquire('c1', 'sA', 'k', '10', 5, 10);
    h.release('c1', 'sA', 'k', '10', 100, 110);
    h.acquire('c2', 'sB', 'k', '11', 105, 120);
    expect(check(h.ops).verdict).toBe('valid');
  });

  test('a second grant while the first is within its TTL and never released: a violation naming both grants', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.open('c2', 'sB', 0);
    const a = h.acquire('c1', 'sA', 'k', '10', 5, 10);
    const b = h.acquire('c2', 'sB', 'k', '11', 200, 210);
    const report = check(h.ops);
    expect(report.verdict).toBe('invalid');
    expect(report.violations).toHaveLength(1);
    const [finding] = report.violations;
    expect(finding).toMatchObject({ rule: 'mutex-overlap', key: 'k' });
    expect(finding!.ops).toEqual(expect.arrayContaining([a.index, b.index]));
    // A is certainly held until its earliest invoke + TTL - slack: 5 + 1000 - 25.
    expect(finding!.window).toEqual([210, 980]);
    const text = renderFinding(finding!, h.ops);
    expect(text).toContain('tokens 10 (session sA) and 11 (session sB)');
    expect(text).toContain('#2 [5.0 ms → 10.0 ms] acquire "k"');
  });

  test('TTL runs from the grant\'s invoke, not its complete: a slow grant answer is no false violation', () => {
    // A was answered at 300, so "complete + TTL" would hold it to 1300; but the store may have made it at 0.
    const h = builder();
    h.open('c1', 'sA', 0);
    h.open('c2', 'sB', 0);
    h.acquire('c1', 'sA', 'k', '10', 0, 300);
    h.acquire('c2', 'sB', 'k', '11', 990, 1_000);
    expect(check(h.ops).verdict).toBe('valid');
  });

  test('an acknowledged renewal extends the hold from its invoke', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.open('c2', 'sB', 0);
    h.acquire('c1', 'sA', 'k', '10', 0, 10);
    h.renew('c1', 'sA', 'k', '10', 800, 810);
    h.acquire('c2', 'sB', 'k', '11', 1_200, 1_210);
    expect(rules(h.ops)).toEqual(['mutex-overlap']);
    // The same renewal answered LOCK_LOST extends nothing: B at 1200 is after A's TTL.
    const g = builder();
    g.open('c1', 'sA', 0);
    g.open('c2', 'sB', 0);
    g.acquire('c1', 'sA', 'k', '10', 0, 10);
    g.renew('c1', 'sA', 'k', '10', 990, 1_010, 'fail', 'LOCK_LOST');
    g.acquire('c2', 'sB', 'k', '11', 1_200, 1_210);
    expect(check(g.ops).verdict).toBe('valid');
  });

  test('a session that was not heartbeated ends its locks at its own TTL', () => {
    const h = builder();
    h.open('c1', 'sA', 0, 1_000);
    h.open('c2', 'sB', 0);
    h.acquire('c1', 'sA', 'k', '10', 10, 20, 5_000);
    h.acquire('c2', 'sB', 'k', '11', 1_500, 1_510);
    expect(check(h.ops).verdict).toBe('valid');
    // Heartbeated at 900, the session (and its lock) certainly lives to 1875: a grant at 1500 overlaps.
    h.add({ process: 'c1', f: 'heartbeat', sessionId: 'sA', invokeAt: 900, completeAt: 905 });
    expect(rules(h.ops)).toEqual(['mutex-overlap']);
  });

  test('an acknowledged revoke ends the hold it names', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.open('c2', 'sB', 0);
    h.acquire('c1', 'sA', 'k', '10', 0, 10);
    h.add({ process: 'admin', f: 'revoke', key: 'k', args: { expectedFencingToken: '10' }, invokeAt: 100, completeAt: 110, result: { outcome: 'REVOKED', revokedFencingToken: '10' } });
    h.acquire('c2', 'sB', 'k', '11', 150, 160);
    expect(check(h.ops).verdict).toBe('valid');
  });

  test('an unanswered release before the next grant: indeterminate, not valid', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.open('c2', 'sB', 0);
    h.acquire('c1', 'sA', 'k', '10', 0, 10);
    const lost = h.release('c1', 'sA', 'k', '10', 100, 2_100, 'unknown');
    h.acquire('c2', 'sB', 'k', '11', 200, 210);
    const report = check(h.ops);
    expect(report.verdict).toBe('indeterminate');
    expect(report.indeterminate[0]!.ops).toContain(lost.index);
    expect(report.indeterminate[0]!.message).toContain('unless an unanswered operation ended one first');
  });

  test('an unanswered release settled by a read that shows the key free before the next grant: valid', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.open('c2', 'sB', 0);
    h.acquire('c1', 'sA', 'k', '10', 0, 10);
    h.release('c1', 'sA', 'k', '10', 100, 2_100, 'unknown');
    h.read('c3', 'k', null, 150, 160);
    h.acquire('c2', 'sB', 'k', '11', 200, 210);
    expect(check(h.ops).verdict).toBe('valid');
  });

  test('an unanswered blind revoke may end any later grant of its key, unless unanswered effects are bounded in time', () => {
    const h = builder();
    h.open('c1', 'sA', 0, 300_000);
    h.open('c2', 'sB', 0, 300_000);
    h.add({ process: 'admin', f: 'revoke', key: 'k', invokeAt: 100, completeAt: 3_100, outcome: 'unknown' });
    h.acquire('c1', 'sA', 'k', '10', 60_000, 60_010);
    h.acquire('c2', 'sB', 'k', '11', 60_200, 60_210);
    expect(check(h.ops).verdict).toBe('indeterminate');
    expect(rules(h.ops, 'indeterminate')).toEqual(['mutex-overlap']);
    expect(check(h.ops, { unknownEffectWithinMillis: 30_000 }).violations.map((v) => v.rule)).toEqual(['mutex-overlap']);
  });

  test('an unanswered acquire of the same session may have made the grant: its TTL may run from there', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.open('c2', 'sB', 0);
    h.acquire('c1', 'sA', 'k', undefined, 0, 2_000); // timed out; the server may have granted at once
    h.acquire('c1', 'sA', 'k', '10', 2_000, 2_010); // "your existing grant"
    h.acquire('c2', 'sB', 'k', '11', 1_500, 2_500);
    expect(check(h.ops).verdict).toBe('valid');
  });

});

describe('semaphores and shared holds (v3 kinds)', () => {
  const kind = (mode: 'exclusive' | 'shared', limit: number) => ({ args: { ttlMillis: 1_000, mode, limit } });
  const sessions = (h: ReturnType<typeof builder>, n: number) => Array.from({ length: n }, (_, i) => h.open(`c${i}`, `s${i}`, 0).sessionId!);

  test('a semaphore of limit 2 with a third grant while two are certainly held: a violation naming the three', () => {
    const h = builder();
    const [s0, s1, s2] = sessions(h, 3);
    const a = h.acquire('c0', s0!, 'k', '10', 5, 10, 1_000, kind('exclusive', 2));
    const b = h.acquire('c1', s1!, 'k', '11', 20, 30, 1_000, kind('exclusive', 2));
    const c = h.acquire('c2', s2!, 'k', '12', 200, 210, 1_000, kind('exclusive', 2));
    const report = check(h.ops);
    expect(report.violations.map((v) => v.rule)).toEqual(['semaphore-over-limit']);
    const [finding] = report.violations;
    expect(finding!.ops).toEqual(expect.arrayContaining([a.index, b.index, c.index]));
    expect(finding!.window[0]).toBe(210);
    expect(finding!.message).toContain('3 exclusive grants (limit 2)');
    const text = renderFinding(finding!, h.ops);
    expect(text).toMatch(/^VIOLATION semaphore-over-limit/);
    for (const token of ['10', '11', '12']) expect(text).toContain(`fencingToken=${token}`);
    expect(report.stats.grantsByKind).toEqual({ mutex: 0, semaphore: 3, shared: 0 });
  });

  test('a semaphore of limit 2 with two holders at a time, the third after a release was invoked: valid', () => {
    const h = builder();
    const [s0, s1, s2] = sessions(h, 3);
    h.acquire('c0', s0!, 'k', '10', 5, 10, 1_000, kind('exclusive', 2));
    h.acquire('c1', s1!, 'k', '11', 20, 30, 1_000, kind('exclusive', 2));
    h.release('c0', s0!, 'k', '10', 100, 110);
    h.acquire('c2', s2!, 'k', '12', 105, 210, 1_000, kind('exclusive', 2));
    // The fenced resource refuses the lower token of two holders side by side: not a mutex holder's loss.
    h.write('c1', 'k', '11', true, 40);
    h.write('c2', 'k', '12', true, 220);
    h.write('c1', 'k', '11', false, 230);
    expect(check(h.ops).verdict).toBe('valid');
  });

  test('the third holder of a limit-2 semaphore, when the first\'s release went unanswered: indeterminate', () => {
    const h = builder();
    const [s0, s1, s2] = sessions(h, 3);
    h.acquire('c0', s0!, 'k', '10', 5, 10, 1_000, kind('exclusive', 2));
    h.acquire('c1', s1!, 'k', '11', 20, 30, 1_000, kind('exclusive', 2));
    h.release('c0', s0!, 'k', '10', 100, 3_000, 'unknown');
    h.acquire('c2', s2!, 'k', '12', 200, 210, 1_000, kind('exclusive', 2));
    const report = check(h.ops);
    expect(report.violations).toEqual([]);
    expect(report.indeterminate.map((f) => f.rule)).toEqual(['semaphore-over-limit']);
    expect(report.verdict).toBe('indeterminate');
  });

  test('holders naming different limits at once (a mutex beside a semaphore of 3): a violation', () => {
    const h = builder();
    const [s0, s1] = sessions(h, 2);
    h.acquire('c0', s0!, 'k', '10', 5, 10, 1_000, kind('exclusive', 3));
    h.acquire('c1', s1!, 'k', '11', 100, 110, 1_000, kind('exclusive', 1));
    expect(rules(h.ops)).toEqual(['semaphore-over-limit']);
  });

  test('shared holds side by side: valid; an exclusive grant among them: a violation', () => {
    const h = builder();
    const [s0, s1, s2] = sessions(h, 3);
    h.acquire('c0', s0!, 'k', '10', 5, 10, 1_000, kind('shared', 1));
    h.acquire('c1', s1!, 'k', '11', 20, 30, 1_000, kind('shared', 1));
    expect(check(h.ops).verdict).toBe('valid');
    const x = h.acquire('c2', s2!, 'k', '12', 100, 110, 1_000, kind('exclusive', 1));
    const report = check(h.ops);
    // Once, against the first shared holder; the mutex rule does not judge shared grants.
    expect(report.violations.map((v) => v.rule)).toEqual(['shared-with-exclusive']);
    expect(report.violations[0]!.message).toContain('shared token 10');
    expect(report.violations[0]!.ops).toEqual(expect.arrayContaining([x.index]));
    expect(report.stats.grantsByKind).toEqual({ mutex: 1, semaphore: 0, shared: 2 });
  });

  test('a shared grant while an exclusive one is certainly held: a violation; after its release: valid', () => {
    const bad = builder();
    const [b0, b1] = sessions(bad, 2);
    bad.acquire('c0', b0!, 'k', '10', 5, 10, 1_000, kind('exclusive', 1));
    bad.acquire('c1', b1!, 'k', '11', 100, 110, 1_000, kind('shared', 1));
    expect(rules(bad.ops)).toEqual(['shared-with-exclusive']);

    const good = builder();
    const [g0, g1] = sessions(good, 2);
    good.acquire('c0', g0!, 'k', '10', 5, 10, 1_000, kind('exclusive', 1));
    good.release('c0', g0!, 'k', '10', 90, 95);
    good.acquire('c1', g1!, 'k', '11', 100, 110, 1_000, kind('shared', 1));
    expect(check(good.ops).verdict).toBe('valid');
  });

  test('a lapsed semaphore holder does not count: the conservative TTL bound from the earliest invoke', () => {
    const h = builder();
    const [s0, s1, s2] = sessions(h, 3);
    h.acquire('c0', s0!, 'k', '10', 0, 500, 1_000, kind('exclusive', 2));
    h.acquire('c1', s1!, 'k', '11', 600, 610, 1_000, kind('exclusive', 2));
    // 10 may have been granted at 0: it lapsed by 975 (TTL − slack), before 12 was answered.
    h.acquire('c2', s2!, 'k', '12', 900, 980, 1_000, kind('exclusive', 2));
    expect(check(h.ops).verdict).toBe('valid');
  });
});

describe('fencing tokens', () => {
  test('a grant made after another was answered carries a higher token, across keys', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.open('c2', 'sB', 0);
    h.acquire('c1', 'sA', 'k1', '10', 0, 10);
    h.acquire('c2', 'sB', 'k2', '5', 20, 30);
    expect(rules(h.ops)).toEqual(['token-order']);
  });

  test('concurrent grants may carry tokens in either order', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.open('c2', 'sB', 0);
    h.acquire('c1', 'sA', 'k1', '10', 0, 30);
    h.acquire('c2', 'sB', 'k2', '5', 20, 40);
    expect(check(h.ops).verdict).toBe('valid');
  });

  test('one token answered for two grants is a violation', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.open('c2', 'sB', 0);
    h.acquire('c1', 'sA', 'k1', '10', 0, 30);
    h.acquire('c2', 'sB', 'k2', '10', 20, 40);
    expect(rules(h.ops)).toContain('token-reused');
  });
});

describe('fenced resource', () => {
  test('accepting a lower token after a higher one was accepted is a violation', () => {
    const h = builder();
    h.write('c1', 'k', '7', true, 100);
    h.write('c2', 'k', '5', true, 200);
    expect(rules(h.ops)).toEqual(['fence-regression']);
  });

  test('refusing a stale holder is right; refusing a write of a certainly held grant is a violation', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.open('c2', 'sB', 0);
    h.acquire('c1', 'sA', 'k', '10', 0, 10);
    h.write('c1', 'k', '10', true, 20);
    h.write('c2', 'k', '9', false, 30); // stale: right
    expect(check(h.ops).verdict).toBe('valid');
    h.write('c1', 'k', '10', false, 40); // its grant is certainly held until 975
    expect(rules(h.ops)).toEqual(['fence-refused-live-holder']);
  });
});

describe('acknowledged state is not lost', () => {
  test('a read during a certain hold that shows the key free: lost grant', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.acquire('c1', 'sA', 'k', '10', 0, 10);
    h.read('c2', 'k', null, 100, 110);
    expect(rules(h.ops)).toEqual(['lost-grant']);
  });

  test('a renewal answered LOCK_LOST during a certain hold: lost grant; after the TTL: fine', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.acquire('c1', 'sA', 'k', '10', 0, 10);
    h.renew('c1', 'sA', 'k', '10', 500, 510, 'fail', 'LOCK_LOST');
    expect(rules(h.ops)).toEqual(['lost-grant']);
    const g = builder();
    g.open('c1', 'sA', 0);
    g.acquire('c1', 'sA', 'k', '10', 0, 10);
    g.renew('c1', 'sA', 'k', '10', 970, 1_010, 'fail', 'LOCK_LOST');
    expect(check(g.ops).verdict).toBe('valid');
  });

  test('a read after an acknowledged release that still shows the grant: lost release', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.acquire('c1', 'sA', 'k', '10', 0, 10);
    h.release('c1', 'sA', 'k', '10', 100, 110);
    h.read('c2', 'k', { token: '10', sessionId: 'sA' }, 105, 115); // concurrent with the release: fine
    expect(check(h.ops).verdict).toBe('valid');
    h.read('c2', 'k', { token: '10', sessionId: 'sA' }, 200, 210);
    expect(rules(h.ops)).toEqual(['lost-release']);
  });

  test('a lapsed holder\'s release acknowledged after the next grant was answered: superseded release; sent before it: valid', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.open('c2', 'sB', 0);
    h.acquire('c1', 'sA', 'k', '10', 0, 10);
    h.acquire('c2', 'sB', 'k', '11', 1_100, 1_110);
    h.release('c1', 'sA', 'k', '10', 1_105, 1_200); // sent before token 11 was answered: it may have been decided first
    expect(check(h.ops).verdict).toBe('valid');
    h.release('c1', 'sA', 'k', '10', 1_300, 1_310);
    const report = check(h.ops);
    expect(report.violations.map((f) => f.rule)).toEqual(['superseded-release']);
    expect(report.violations[0]!.ops).toEqual([2, 3, 5]);
    expect(report.violations[0]!.message).toContain('token 11 had certainly been granted');
  });

  test('a heartbeat answered SESSION_NOT_FOUND while the session certainly lives: lost session', () => {
    const h = builder();
    h.open('c1', 'sA', 0, 1_000);
    h.add({ process: 'c1', f: 'heartbeat', sessionId: 'sA', invokeAt: 500, completeAt: 510, outcome: 'fail', error: { status: 404, code: 'SESSION_NOT_FOUND' } });
    expect(rules(h.ops)).toEqual(['lost-session']);
  });
});

describe('"already gone" answers to ending operations (C3: benign)', () => {
  test('a close answered SESSION_NOT_FOUND while the session was certainly live: it may have closed it itself, not a lost session', () => {
    // The etcd torture's first finding: L3's txn applied, its answer was lost in a store partition, the
    // store re-sent it, the repeat's compare failed and the re-read found the session gone.
    const h = builder();
    h.open('c1', 'sA', 0, 4_000);
    h.add({ process: 'c1', f: 'close', sessionId: 'sA', invokeAt: 500, completeAt: 1_600, outcome: 'fail', error: { status: 404, code: 'SESSION_NOT_FOUND' } });
    expect(check(h.ops).verdict).toBe('valid');
  });

  test('a release answered LOCK_LOST may have ended the grant: the next holder is no overlap', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.open('c2', 'sB', 0);
    h.acquire('c1', 'sA', 'k', '10', 5, 10);
    h.release('c1', 'sA', 'k', '10', 100, 400, 'fail', 'LOCK_LOST');
    h.acquire('c2', 'sB', 'k', '11', 150, 200);
    expect(check(h.ops).verdict).toBe('valid');
  });

  test('but a grant shown alive after such a release was answered: the LOCK_LOST was a lost grant', () => {
    const h = builder();
    h.open('c1', 'sA', 0);
    h.acquire('c1', 'sA', 'k', '10', 5, 10);
    h.release('c1', 'sA', 'k', '10', 100, 110, 'fail', 'LOCK_LOST');
    h.renew('c1', 'sA', 'k', '10', 200, 210);
    expect(rules(h.ops)).toEqual(['lost-grant']);
  });
});

describe('recording', () => {
  test('every acquire names its kind: the defaults (exclusive, 1) when the request left them out', () => {
    const plain = classify({ method: 'POST', path: '/v1/locks/k/acquire', body: { sessionId: 's', ttlMillis: 1_000 } }, 'c0', 'A');
    expect(plain?.args).toEqual({ ttlMillis: 1_000, mode: 'exclusive', limit: 1 });
    const semaphore = classify({ method: 'POST', path: '/v1/locks/k/acquire', body: { sessionId: 's', mode: 'exclusive', limit: 3 } }, 'c0', 'A');
    expect(semaphore?.args).toEqual({ mode: 'exclusive', limit: 3 });
    const answered = completionOf('acquire', { status: 200, header: () => null, body: { fencingToken: '7', ttlMillis: 1_000, mode: 'shared', limit: 1 } });
    expect(answered.result).toMatchObject({ fencingToken: '7', mode: 'shared', limit: 1 });
    expect(classify({ method: 'POST', path: '/v1/locks/k/renew', body: { sessionId: 's', fencingToken: '7' } }, 'c0', 'A')?.args).toEqual({ fencingToken: '7' });
  });
});

describe('format and picture', () => {
  const h = builder();
  h.open('c1', 'sA', 0);
  h.open('c2', 'sB', 0);
  h.acquire('c1', 'sA', 'k', '10', 5, 10);
  h.acquire('c2', 'sB', 'k', '11', 200, 210);
  h.add({ process: 'nemesis', f: 'fault', args: { kind: 'blackhole', millis: 300 }, invokeAt: 50, completeAt: 350, result: { target: 'A' } });
  const history: History = { header: { format: HISTORY_FORMAT, clock: 'ms since origin, performance.now() of the test process', store: 'embedded', seed: 1 }, ops: h.ops };

  test('JSON Lines round trip keeps every field', () => {
    const text = toJsonLines(history);
    expect(text.split('\n')[0]).toContain(HISTORY_FORMAT);
    expect(fromJsonLines(text)).toEqual(history);
  });

  test('the timeline is one self-contained page with the violation marked', () => {
    const report = check(history);
    const html = renderTimeline(history, report);
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('<svg');
    expect(html).toContain('verdict: INVALID');
    expect(html).toContain('violation: mutex-overlap');
    expect(html).toContain('fill="#e74c3c" opacity="0.18"'); // the finding's window
    expect(html).not.toMatch(/<script|\bsrc=|\bhref=|<link/);
    expect(renderReport(report, history.ops)).toContain('verdict: INVALID — 1 violation(s)');
  });
});
