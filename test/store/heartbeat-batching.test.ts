/**
 * Concurrent heartbeats and session opens on the SQL store share one statement,
 * and each caller still gets its own answer: a lapsed session its 404 (session_not_found),
 * a wrong token its 401 (unauthenticated), and neither changes anything.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import type { SqlDatabase } from '../../lock/store/sql/queryable.js';
import type { HeartbeatResult } from '../../lock/store/spi.js';
import { openCountingStore } from '../support/counting-database.js';
import { openTestSession, type TestSession } from '../support/store-sessions.js';

describe.each(['postgres', 'embedded'] as const)('heartbeat batching on %s', (backend) => {
  let store: SqlLockStore;
  let raw: SqlDatabase;
  let statements: () => number;
  beforeAll(async () => {
    ({ store, statements, raw } = await openCountingStore(backend));
  });
  afterAll(async () => {
    await store?.close();
  });

  test('64 opens in one turn: one INSERT, each caller gets its own record', async () => {
    const before = statements();
    const opened = await Promise.all(Array.from({ length: 64 }, (_, i) => openTestSession(store, { owner: `owner-${i}`, ttlMillis: 10_000 + i })));
    expect(statements() - before).toBe(1);
    opened.forEach((s, i) => expect(s.record).toMatchObject({ owner: `owner-${i}`, ttlMillis: 10_000 + i, sessionId: s.credential.sessionId }));
    expect(new Set(opened.map((s) => s.record.sessionId)).size).toBe(64);
  });

  test('64 heartbeats in one turn: one statement; a lapsed session and a wrong token are refused alone', async () => {
    const sessions: TestSession[] = await Promise.all(Array.from({ length: 64 }, () => openTestSession(store, { ttlMillis: 60_000 })));
    const lapsed = sessions[17]!;
    const wronged = sessions[40]!;
    // Lapse one session by the database clock (no waiting): its expiry is now in the past.
    await raw.query('UPDATE holdfast_sessions SET expires_at = holdfast_now_ms() - 1 WHERE session_id = $1', [lapsed.credential.sessionId]);

    const before = statements();
    const results: HeartbeatResult[] = await Promise.all(
      sessions.map((s) => store.heartbeat(s === wronged ? s.impostor : s.credential)),
    );
    expect(statements() - before).toBe(1);

    expect(results[17]).toEqual({ kind: 'session_not_found' });
    expect(results[40]).toEqual({ kind: 'unauthenticated' });
    results.forEach((result, i) => {
      if (i === 17 || i === 40) return;
      expect(result.kind).toBe('alive');
      if (result.kind !== 'alive') return;
      expect(result.session.sessionId).toBe(sessions[i]!.credential.sessionId);
      expect(result.session.lastHeartbeatAt).toBeGreaterThanOrEqual(sessions[i]!.record.lastHeartbeatAt);
      expect(result.session.expiresAt).toBe(result.session.lastHeartbeatAt + 60_000);
    });
    // Neither refusal changed anything: the lapsed session stays lapsed, the wronged one keeps its old expiry.
    expect(await store.getSession(lapsed.credential.sessionId)).toBeNull();
    expect(await store.getSession(wronged.credential.sessionId)).toMatchObject({ expiresAt: wronged.record.expiresAt });
  });

  test('one session twice in a batch, once with a wrong token: the right one is alive, the wrong one 401', async () => {
    const s = await openTestSession(store);
    const [right, wrong] = await Promise.all([store.heartbeat(s.credential), store.heartbeat(s.impostor)]);
    expect(right.kind).toBe('alive');
    expect(wrong).toEqual({ kind: 'unauthenticated' });
  });

  test('a lone heartbeat of an unknown session is session_not_found', async () => {
    expect(await store.heartbeat({ sessionId: 's_unknown', tokenHash: 'x'.repeat(64) })).toEqual({ kind: 'session_not_found' });
  });
});
