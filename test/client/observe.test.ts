/**
 * `client.observe` against a scripted L8 (ManualClock, no real time): what each poll sends
 * (`after`, `waitMillis`), what is yielded, and how it resumes — dropped connections, 5xx and
 * NOT_LEADER are retried with the same `after`; an unchanged answer yields nothing; a stale
 * answer is not yielded; a free key is polled with pauses, not in a spin; return() and the
 * signal end it with the poll in flight aborted; a 403 is thrown.
 */
import { describe, expect, it } from 'vitest';
import { LockClient } from '../../client/client.js';
import { ServerError } from '../../client/errors.js';
import { ManualClock } from '../../client/manual-clock.js';
import { seededRandom } from '../../client/random.js';
import type { Transport, TransportRequest, TransportResponse } from '../../client/transport.js';
import type { LockInfo } from '../../client/wire.js';

type Answer = { status: number; body: unknown } | 'drop' | 'hang';

interface Poll {
  after: string | null;
  waitMillis: string | null;
  at: number;
  signal: AbortSignal | undefined;
}

/** Answers each L8 poll from a script, after `delay` ms of the ManualClock; records what it was sent. */
class ScriptedWatch implements Transport {
  readonly polls: Poll[] = [];
  constructor(
    private readonly clock: ManualClock,
    private readonly script: (poll: Poll, index: number) => { answer: Answer; delay?: number },
  ) {}

  async send(request: TransportRequest): Promise<TransportResponse> {
    const url = new URL(request.path, 'http://x');
    expect(url.pathname).toMatch(/^\/v1\/locks\/[^/]+\/watch$/);
    const poll = { after: url.searchParams.get('after'), waitMillis: url.searchParams.get('waitMillis'), at: this.clock.now(), signal: request.signal };
    this.polls.push(poll);
    const { answer, delay = 0 } = this.script(poll, this.polls.length - 1);
    if (delay > 0) await this.clock.sleep(delay, request.signal);
    if (answer === 'drop') throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    if (answer === 'hang') return new Promise((_, reject) => request.signal?.addEventListener('abort', () => reject(request.signal!.reason)));
    return { status: answer.status, body: answer.body, header: () => null };
  }
}

const held = (token: string, owner = `o-${token}`, value?: string): { status: number; body: LockInfo } => ({
  status: 200,
  body: {
    key: 'leader',
    held: true,
    sessionId: `s_${token}`,
    owner,
    fencingToken: token,
    grantedAt: 1,
    expiresAt: 2,
    mode: 'exclusive',
    limit: 1,
    holders: [{ sessionId: `s_${token}`, owner, fencingToken: token, grantedAt: 1, expiresAt: 2, ...(value === undefined ? {} : { value }) }],
    waiterCount: 0,
  },
});
const free = { status: 200, body: { key: 'leader', held: false, holders: [], waiterCount: 0 } };
const error = (status: number, code: string) => ({ status, body: { error: { code, message: code, retryable: status === 503, requestId: 'r' } } });

function observer(script: ConstructorParameters<typeof ScriptedWatch>[1], options: { waitMillis?: number; signal?: AbortSignal } = {}) {
  const clock = new ManualClock();
  const transport = new ScriptedWatch(clock, script);
  const client = new LockClient({ transport, clock, random: seededRandom(7) });
  return { clock, transport, iterator: client.observe('leader', { waitMillis: 1_000, ...options }) };
}

describe('client.observe (scripted L8)', () => {
  it('yields the leader now, then one item per change; every later poll names the last term as after', async () => {
    const { clock, transport, iterator } = observer((poll, i) =>
      [
        { answer: held('5', 'a', 'addr-a') },
        { answer: held('5', 'a', 'addr-a'), delay: 1_000 }, // the wait ran out: unchanged, no item
        { answer: held('9', 'b', 'addr-b'), delay: 300 },
        { answer: 'hang' as const },
      ][i]!,
    );
    expect(await clock.runUntilSettled(iterator.next())).toEqual({ done: false, value: { term: '5', owner: 'a', value: 'addr-a' } });
    expect(await clock.runUntilSettled(iterator.next())).toEqual({ done: false, value: { term: '9', owner: 'b', value: 'addr-b' } });
    expect(transport.polls.map((p) => [p.after, p.waitMillis])).toEqual([
      [null, '0'],
      ['5', '1000'],
      ['5', '1000'],
    ]);
    // The unchanged answer at the end of its wait is followed at once by the next poll.
    expect(transport.polls[2]!.at).toBe(1_000);
    await iterator.return();
  });

  it('a dropped connection, a 503 NOT_LEADER and a 500 are retried with the same after: the change made meanwhile is yielded once', async () => {
    const { clock, transport, iterator } = observer((poll, i) =>
      [
        { answer: held('5') },
        { answer: 'drop' as const, delay: 200 },
        { answer: error(503, 'NOT_LEADER') },
        { answer: error(500, 'INTERNAL') },
        { answer: held('6') },
      ][i]!,
    );
    expect((await clock.runUntilSettled(iterator.next())).value).toMatchObject({ term: '5' });
    expect((await clock.runUntilSettled(iterator.next())).value).toMatchObject({ term: '6' });
    expect(transport.polls.slice(1).map((p) => p.after)).toEqual(['5', '5', '5', '5']);
    // Each retry waited a backoff pause (the floor at least): no request storm.
    for (let i = 2; i < transport.polls.length; i += 1) expect(transport.polls[i]!.at - transport.polls[i - 1]!.at).toBeGreaterThanOrEqual(100);
    await iterator.return();
  });

  it('an answer below the last term (a lagging read) is not yielded; a proclaimed value of the same term is', async () => {
    const { clock, iterator } = observer((poll, i) => [{ answer: held('7', 'a', 'v1') }, { answer: held('6'), delay: 1_000 }, { answer: held('7', 'a', 'v2'), delay: 1_000 }][i]!);
    expect((await clock.runUntilSettled(iterator.next())).value).toEqual({ term: '7', owner: 'a', value: 'v1' });
    expect((await clock.runUntilSettled(iterator.next())).value).toEqual({ term: '7', owner: 'a', value: 'v2' });
    await iterator.return();
  });

  it('a free key answered at once (after=0 cannot park) is polled with pauses, not in a spin; its next leader is yielded', async () => {
    const { clock, transport, iterator } = observer((poll, i) => ({ answer: i < 12 ? free : held('3') }));
    expect(await clock.runUntilSettled(iterator.next())).toEqual({ done: false, value: null });
    expect((await clock.runUntilSettled(iterator.next())).value).toMatchObject({ term: '3' });
    expect(transport.polls).toHaveLength(13);
    expect(transport.polls.slice(1).every((p) => p.after === '0')).toBe(true);
    for (let i = 2; i < transport.polls.length; i += 1) {
      const gap = transport.polls[i]!.at - transport.polls[i - 1]!.at;
      expect(gap).toBeGreaterThanOrEqual(100);
      expect(gap).toBeLessThanOrEqual(1_100);
    }
    await iterator.return();
  });

  it('return() and the signal end it at once, aborting the poll in flight', async () => {
    const first = observer((poll, i) => ({ answer: i === 0 ? held('5') : 'hang' }));
    await first.clock.runUntilSettled(first.iterator.next());
    const pending = first.iterator.next();
    await ManualClock.flush();
    expect(first.transport.polls).toHaveLength(2);
    expect(await first.iterator.return()).toEqual({ done: true, value: undefined });
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(first.transport.polls[1]!.signal!.aborted).toBe(true);

    const controller = new AbortController();
    const second = observer((poll, i) => ({ answer: i === 0 ? held('5') : 'hang' }), { signal: controller.signal });
    const items: unknown[] = [];
    const loop = (async () => {
      for await (const leader of second.iterator) items.push(leader);
    })();
    await second.clock.runUntilSettled(new Promise<void>((resolve) => setImmediate(resolve)));
    await ManualClock.flush();
    controller.abort();
    await loop;
    expect(items).toHaveLength(1);
    expect(second.transport.polls.at(-1)!.signal!.aborted).toBe(true);
  });

  it('a 403 is thrown from next() and ends the iteration; a bad waitMillis is a ValidationError before anything is sent', async () => {
    const { clock, iterator } = observer(() => ({ answer: error(403, 'FORBIDDEN') }));
    await expect(clock.runUntilSettled(iterator.next())).rejects.toBeInstanceOf(ServerError);
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    const client = new LockClient({ transport: new ScriptedWatch(new ManualClock(), () => ({ answer: free })) });
    expect(() => client.observe('leader', { waitMillis: 0 })).toThrow(/waitMillis/);
    expect(() => client.observe('')).toThrow();
  });
});
