/**
 * The session capability on the SDK side (issue 10, item 3): the token from L1
 * goes out as the bearer of this session's own L2–L6 calls and nowhere else —
 * not on L1/L7, not in logs, errors, spans, or the session and handle objects —
 * and a 401 on a session call is a terminal loss like SESSION_NOT_FOUND.
 */
import { inspect } from 'node:util';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { ServerError, SessionLostError } from '../../client/errors.js';
import type { ClientLogger } from '../../client/logger.js';
import { error } from './support/fake-lock-server.js';
import { fakeWorld } from './support/fake-world.js';

function capturingLogger(): { logger: ClientLogger; lines: string[] } {
  const lines: string[] = [];
  const keep = (fields: Record<string, unknown>, message: string) =>
    lines.push(`${message} ${inspect(fields, { depth: 10, showHidden: true })}`);
  return { lines, logger: { debug: keep, warn: keep } };
}

async function lostCount(world: ReturnType<typeof fakeWorld>): Promise<number> {
  const metric = await world.registry.getSingleMetric('lock_session_lost_total')?.get();
  return (metric?.values ?? []).reduce((sum, v) => sum + v.value, 0);
}

describe('session token on the wire', () => {
  it('every L2–L6 carries Bearer <its own session token>; L1 and L7 carry none unless a client token is configured', async () => {
    const world = fakeWorld();
    const client = world.client();
    const a = await world.run(client.openSession({ ttlMillis: 3_000 }));
    const b = await world.run(client.openSession({ ttlMillis: 3_000 }));
    await world.run(
      a.withLock('k', async () => {
        await world.clock.sleep(2_500); // heartbeats and renewals go out meanwhile
      }, { ttlMillis: 3_000 }),
    );
    const hb = (await world.run(b.acquire('j')))!;
    await world.run(b.release(hb));
    await world.run(client.readLock('k'));
    await world.run(a.close());
    await world.run(b.close());

    const tokenOf = new Map<string, string>();
    for (const call of world.server.calls.filter((c) => c.route === 'L1')) expect(call.authorization).toBeUndefined();
    // The fake server's tokens are `secret-token-of-<id>-…`; each call must carry its own session's.
    for (const route of ['L2', 'L3', 'L4', 'L5', 'L6'] as const) {
      const calls = world.server.calls.filter((c) => c.route === route);
      expect(calls.length, route).toBeGreaterThan(0);
      for (const call of calls) {
        const sessionId = (call.body.sessionId as string | undefined) ?? call.path.split('/')[3]!;
        expect(call.authorization).toMatch(new RegExp(`^Bearer secret-token-of-${sessionId}-x+$`));
        tokenOf.set(sessionId, call.authorization!);
      }
    }
    expect(new Set(tokenOf.values()).size).toBe(2);
    expect(world.server.calls.find((c) => c.route === 'L7')!.authorization).toBeUndefined();

    const withClientToken = world.client({ token: 'client-bearer' });
    const c = await world.run(withClientToken.openSession());
    await world.run(withClientToken.readLock('k'));
    const l1 = world.server.calls.filter((x) => x.route === 'L1').at(-1)!;
    const l7 = world.server.calls.filter((x) => x.route === 'L7').at(-1)!;
    expect(l1.authorization).toBe('Bearer client-bearer');
    expect(l7.authorization).toBe('Bearer client-bearer');
    await world.run(c.close());
    expect(world.server.calls.filter((x) => x.route === 'L3').at(-1)!.authorization).not.toContain('client-bearer');
  });

  it('the token appears in no log line, thrown error, span, or the session/handle objects', async () => {
    const world = fakeWorld();
    const { logger, lines } = capturingLogger();
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const client = world.client({ logger, tracerProvider: provider });
    const session = await world.run(client.openSession({ ttlMillis: 3_000 }));
    const handle = (await world.run(session.acquire('k')))!;
    const token = world.server.calls.find((c) => c.route === 'L4')!.authorization!.slice('Bearer '.length);
    expect(token).toMatch(/^secret-token-of-/);

    const errors: unknown[] = [];
    world.server.intercept = (c) => (c.route === 'L4' ? error(500, 'INTERNAL', 'boom') : undefined);
    errors.push(await world.run(session.acquire('other')).catch((e: unknown) => e));
    // A malformed L1 answer that echoes a token must not leak it into the error either.
    world.server.intercept = (c) => (c.route === 'L1' ? { status: 201, body: { sessionToken: token } } : undefined);
    errors.push(await world.run(client.openSession()).catch((e: unknown) => e));
    world.server.intercept = (c) => (c.route === 'L2' ? error(401, 'UNAUTHENTICATED', 'wrong session token') : undefined);
    await world.clock.advance(2_000);
    expect(session.lost).toBe(true);
    errors.push(handle.signal.reason, await world.run(session.acquire('again')).catch((e: unknown) => e));

    expect(errors[0]).toBeInstanceOf(ServerError);
    expect(errors[1]).toBeInstanceOf(ServerError);
    expect(errors[3]).toBeInstanceOf(SessionLostError);
    const everything = [
      ...lines,
      ...errors.map((e) => `${inspect(e, { depth: 10, showHidden: true })} ${(e as Error).message} ${(e as Error).stack}`),
      inspect(session, { depth: 10, showHidden: true }),
      inspect(handle, { depth: 10, showHidden: true }),
      JSON.stringify(session),
      JSON.stringify(handle),
      JSON.stringify(Object.entries(session)),
      ...exporter.getFinishedSpans().map((s) => JSON.stringify({ name: s.name, attributes: s.attributes, events: s.events })),
    ].join('\n');
    expect(lines.length).toBeGreaterThan(0);
    expect(exporter.getFinishedSpans().length).toBeGreaterThan(0);
    expect(everything).not.toContain(token);
    expect(everything).not.toContain('secret-token-of-');
  });
});

describe('401 on a session call is a terminal loss (lossCause: unauthenticated)', () => {
  it('a heartbeat answered 401: every handle lost at once, counted once, later calls throw', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 9_000 }));
    const handle = (await world.run(session.acquire('k', { ttlMillis: 60_000 })))!;
    world.server.intercept = (c) => (c.route === 'L2' ? error(401, 'UNAUTHENTICATED', 'wrong session token') : undefined);
    await world.clock.advance(3_000); // one heartbeat interval
    expect(session.lost).toBe(true);
    expect(handle.lost).toBe(true);
    expect((handle.signal.reason as SessionLostError).lossCause).toBe('unauthenticated');
    expect(world.server.count('L2')).toBe(1); // not retried
    await world.clock.advance(30_000);
    expect(await lostCount(world)).toBe(1);
    await expect(session.acquire('j')).rejects.toMatchObject({ lossCause: 'unauthenticated' });
  });

  it('an acquire answered 401 throws SessionLostError after one call; a renewal answered 401 loses the session', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 9_000 }));
    world.server.intercept = (c) => (c.route === 'L4' ? error(401, 'UNAUTHENTICATED', 'wrong session token') : undefined);
    const thrown = await world.run(session.acquire('k')).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(SessionLostError);
    expect((thrown as SessionLostError).lossCause).toBe('unauthenticated');
    expect(world.server.count('L4')).toBe(1);

    const other = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    world.server.intercept = (c) => (c.route === 'L5' ? error(401, 'UNAUTHENTICATED', 'wrong session token') : undefined);
    await world.run(
      other
        .withLock('r', async (handle) => {
          await world.clock.sleep(10_000, handle.signal).catch(() => {});
          expect(handle.lost).toBe(true);
        }, { ttlMillis: 3_000 })
        .catch(() => {}),
    );
    expect(other.lost).toBe(true);
    expect(world.server.count('L5')).toBe(1);
  });

  it('a release answered 401 throws SessionLostError (the lock may still be held); a release answered 404 is benign', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 9_000 }));
    const handle = (await world.run(session.acquire('k')))!;
    world.server.intercept = (c) => (c.route === 'L6' ? error(401, 'UNAUTHENTICATED', 'wrong session token') : undefined);
    await expect(world.run(session.release(handle))).rejects.toMatchObject({ lossCause: 'unauthenticated' });

    const benign = await world.run(world.client().openSession({ ttlMillis: 9_000 }));
    const held = (await world.run(benign.acquire('j')))!;
    world.server.intercept = (c) => (c.route === 'L6' ? error(404, 'SESSION_NOT_FOUND', 'no session') : undefined);
    await expect(world.run(benign.release(held))).resolves.toBeUndefined();
    expect(held.signal.aborted).toBe(true);
  });
});
