/**
 * The clock-skew scenario shared by the PostgreSQL and etcd server-level tests: two
 * servers on one store, one of them with a skewed Clock (core's seam), workers running
 * acquire / contend / renew / read / release / re-acquire cycles through both while
 * their sessions heartbeat.
 *
 * Liveness is judged, not raced: each grant and session has a TtlWitness, so a step is
 * held to "it must have found the lock (session) live" only when the step was answered
 * before the TTL could have passed, measured on this process's monotonic clock from the
 * request that started it. A busy machine that really lets a TTL run out makes a cycle
 * unproven (counted, printed), never a failure; a store that ends a lock or session
 * before its TTL, or grants a live lock to another session, is a problem however fast
 * or slow the machine is. The fenced resource judges every write, with no timing at all.
 */
import { FencedResourceRecorder } from './fenced-resource.js';
import { httpClient, type Answer } from './http.js';
import type { TestServer } from './server.js';
import { TtlWitness, timed } from './ttl-witness.js';

type Api = ReturnType<typeof httpClient>;
export type Side = 'normal' | 'skewed';
/** A step's server, from the cycle's pair (first, second alternate between the servers per cycle). */
export type Pick = 'first' | 'second' | Side;

export interface SkewCyclesOptions {
  normal: TestServer;
  skewed: TestServer;
  /** Key prefix, distinct per run. */
  label: string;
  cycles: number;
  workers: number;
  sessionTtlMillis: number;
  lockTtlMillis: number;
  heartbeatEveryMillis: number;
  /** Heartbeats go on until each session is at least this old: it outlives its TTL on heartbeats alone. */
  runAtLeastMillis: number;
  holder: { openOn: Side; beatOn: Side };
  rival: { openOn: Side; beatOn: Side };
  steps: { renew: Pick; read: Pick; release: Pick; next: Pick; rivalRelease: Pick };
  /** The holder writes to the fenced resource again after the read shows it still holds. */
  writeAfterRead: boolean;
  /** The server whose admin list is asked whether the sessions are still there. */
  listOn: Side;
}

export interface SkewCyclesResult {
  problems: string[];
  recorder: FencedResourceRecorder;
  /** Writes offered to the fenced resource. */
  writes: number;
  /** Cycles whose every liveness expectation was provable (see the header). */
  provenCycles: number;
  /** Sessions whose TTL could have passed at some point (the machine was too slow to prove liveness). */
  lapsedSessions: number;
  /** Sessions provably live when the run ended (listed, and no TTL expiry logged for them). */
  provenSessions: number;
  heartbeatsOk: number;
  /** Benchmarks (printed, not asserted). */
  elapsedMillis: number;
  smallestLockMarginMillis: number;
  smallestSessionMarginMillis: number;
  /** The slowest single request and what it was. */
  slowestRequest: string;
}

const describeAnswer = (a: Answer) => `${a.status} ${JSON.stringify(a.body)}`;
const isCode = (a: Answer, status: number, code: string) => a.status === status && a.body?.error?.code === code;

export async function runSkewCycles(o: SkewCyclesOptions): Promise<SkewCyclesResult> {
  const apis: Record<Side, Api> = { normal: httpClient(o.normal.url), skewed: httpClient(o.skewed.url) };
  const recorder = new FencedResourceRecorder();
  const problems: string[] = [];
  const lockMargins: TtlWitness[] = [];
  const sessionMargins: TtlWitness[] = [];
  let writes = 0;
  let provenCycles = 0;
  let lapsedSessions = 0;
  let provenSessions = 0;
  let heartbeatsOk = 0;
  let slowest = { millis: 0, what: '' };
  const step = async <T>(what: string, request: () => Promise<T>) => {
    const t = await timed(request);
    if (t.answeredAt - t.sentAt > slowest.millis) slowest = { millis: t.answeredAt - t.sentAt, what };
    return t;
  };
  const write = (key: string, token: string) => {
    writes += 1;
    recorder.write(key, token);
  };

  const worker = async (w: number) => {
    const open = async (role: 'holder' | 'rival') => {
      const opened = await step(`open on ${o[role].openOn}`, () => apis[o[role].openOn].openSession({ ttlMillis: o.sessionTtlMillis, owner: `${role}-${w}` }));
      if (opened.answer.status !== 201) throw new Error(`open ${role}-${w}: ${describeAnswer(opened.answer)}`);
      const life = new TtlWitness(o.sessionTtlMillis);
      life.started(opened.sentAt);
      sessionMargins.push(life);
      const id = opened.answer.body.sessionId as string;
      return { id, token: apis[o[role].openOn].sessionToken(id)!, life, openedAt: opened.sentAt, beatOn: o[role].beatOn, lapsed: false };
    };
    const holder = await open('holder');
    const rival = await open('rival');
    const as = (s: { token: string }) => ({ authorization: `Bearer ${s.token}` });

    let cycling = true;
    const beats = (async () => {
      const oldEnough = () => performance.now() - Math.max(holder.openedAt, rival.openedAt) >= o.runAtLeastMillis;
      while (cycling || !oldEnough()) {
        for (const s of [holder, rival]) {
          const beat = await step(`heartbeat on ${s.beatOn}`, () => apis[s.beatOn].heartbeat(s.id, as(s)));
          const mustBeLive = s.life.mustBeLive(beat.answeredAt);
          if (beat.answer.status === 200) {
            heartbeatsOk += 1;
            s.life.started(beat.sentAt);
          } else if (mustBeLive) {
            problems.push(`heartbeat ${s.id}: session ended before its TTL: ${describeAnswer(beat.answer)}`);
          } else {
            s.lapsed = true;
          }
        }
        await new Promise((resolve) => setTimeout(resolve, o.heartbeatEveryMillis));
      }
    })();

    try {
      for (let cycle = w; cycle < o.cycles; cycle += o.workers) {
        const key = `${o.label}/${cycle}`;
        const [first, second] = cycle % 2 === 0 ? (['skewed', 'normal'] as const) : (['normal', 'skewed'] as const);
        const side = (pick: Pick): Side => (pick === 'first' ? first : pick === 'second' ? second : pick);
        const on = (pick: Pick): Api => apis[side(pick)];
        let proven = true;
        /** A step that went wrong: a problem if its expectation was provable, else the cycle proves less. */
        const judge = (ok: boolean, provable: boolean, problem: () => string) => {
          if (ok) return;
          if (provable) problems.push(`cycle ${cycle}: ${problem()}`);
          else proven = false;
        };

        const grant = await step(`acquire on ${first}`, () => on('first').acquire(key, { sessionId: holder.id, ttlMillis: o.lockTtlMillis }, as(holder)));
        judge(grant.answer.status === 200, holder.life.mustBeLive(grant.answeredAt), () => `holder acquire of a free key ${describeAnswer(grant.answer)}`);
        if (grant.answer.status !== 200) {
          if (proven) provenCycles += 1;
          continue;
        }
        const token = grant.answer.body.fencingToken as string;
        const lock = new TtlWitness(o.lockTtlMillis);
        lock.started(grant.sentAt);
        lockMargins.push(lock);
        // The holder's grant is live while its TTL and its session's have not passed.
        const held = (answeredAt: number) => lock.mustBeLive(answeredAt) && holder.life.mustBeLive(answeredAt);
        write(key, token);

        // While the grant is live, neither server may hand the key to the rival.
        const early = await step(`contended acquire on ${second}`, () => on('second').acquire(key, { sessionId: rival.id }, as(rival)));
        const liveThen = held(early.answeredAt);
        if (early.answer.status === 200) {
          write(key, early.answer.body.fencingToken);
          if (liveThen) problems.push(`cycle ${cycle}: early grant: the rival got a live lock: ${describeAnswer(early.answer)}`);
          else proven = false;
        } else {
          judge(isCode(early.answer, 409, 'LOCK_CONTENDED'), liveThen && rival.life.mustBeLive(early.answeredAt), () => `rival acquire ${describeAnswer(early.answer)}`);
        }

        const renewed = await step(`renew on ${side(o.steps.renew)}`, () => on(o.steps.renew).renew(key, { sessionId: holder.id, fencingToken: token }, as(holder)));
        if (renewed.answer.status === 200) {
          if (renewed.answer.body.fencingToken !== token || renewed.answer.body.ttlMillis !== o.lockTtlMillis) {
            problems.push(`cycle ${cycle}: renew answered another grant ${describeAnswer(renewed.answer)}`);
          } else {
            lock.started(renewed.sentAt);
          }
        } else {
          judge(false, held(renewed.answeredAt), () => `renew of a live grant ${describeAnswer(renewed.answer)}`);
        }

        const still = await step(`read on ${side(o.steps.read)}`, () => on(o.steps.read).read(key));
        const holds = still.answer.status === 200 && still.answer.body.held === true && still.answer.body.fencingToken === token;
        judge(holds, held(still.answeredAt), () => `expired early: ${describeAnswer(still.answer)}`);
        if (holds && o.writeAfterRead) write(key, token);

        const released = await step(`release on ${side(o.steps.release)}`, () => on(o.steps.release).release(key, { sessionId: holder.id, fencingToken: token }, as(holder)));
        judge(released.answer.status === 200, held(released.answeredAt), () => `release of a live grant ${describeAnswer(released.answer)}`);

        // The holder's grant is gone (released, lost, or its session ended): the key is free, or
        // already the rival's (an early grant, only if that was not provably early).
        const holderGone =
          released.answer.status === 200 || isCode(released.answer, 409, 'LOCK_LOST') || isCode(released.answer, 404, 'SESSION_NOT_FOUND');
        const next = await step(`acquire after release on ${side(o.steps.next)}`, () => on(o.steps.next).acquire(key, { sessionId: rival.id }, as(rival)));
        judge(next.answer.status === 200, holderGone && rival.life.mustBeLive(next.answeredAt), () => `rival after release ${describeAnswer(next.answer)}`);
        if (next.answer.status === 200) {
          write(key, next.answer.body.fencingToken);
          await on(o.steps.rivalRelease).release(key, { sessionId: rival.id, fencingToken: next.answer.body.fencingToken }, as(rival));
        }
        if (proven) provenCycles += 1;
      }
    } finally {
      cycling = false;
      await beats;
    }

    // Both sessions outlived their TTL on heartbeats alone; none was ended by a sweeper.
    const listed = await timed(() => apis[o.listOn].admin((o.listOn === 'normal' ? o.normal : o.skewed).viewerToken).listSessions('?limit=1000'));
    const ttlEnded = new Set(
      [...o.normal.logs, ...o.skewed.logs].filter((l) => l.event === 'session_expired' && l.cause === 'ttl').map((l) => l.sessionId),
    );
    for (const s of [holder, rival]) {
      const present = (listed.answer.body.items as { sessionId: string }[]).some((item) => item.sessionId === s.id);
      if (s.lapsed || !s.life.mustBeLive(listed.answeredAt)) {
        lapsedSessions += 1;
        continue;
      }
      if (!present) problems.push(`session ${s.id} ended before its TTL`);
      if (ttlEnded.has(s.id)) problems.push(`session ${s.id} expired by a sweeper before its TTL`);
      if (present && !ttlEnded.has(s.id)) provenSessions += 1;
    }
  };

  const started = performance.now();
  await Promise.all(Array.from({ length: o.workers }, (_, w) => worker(w)));
  const smallest = (witnesses: TtlWitness[]) => Math.min(...witnesses.map((w) => w.smallestMargin));
  return {
    problems,
    recorder,
    writes,
    provenCycles,
    lapsedSessions,
    provenSessions,
    heartbeatsOk,
    elapsedMillis: performance.now() - started,
    smallestLockMarginMillis: smallest(lockMargins),
    smallestSessionMarginMillis: smallest(sessionMargins),
    slowestRequest: `${slowest.what} ${slowest.millis.toFixed(0)} ms`,
  };
}

/** The run's figures on one line (printed as a benchmark, never asserted). */
export function skewRunLine(run: SkewCyclesResult, o: { cycles: number; lockTtlMillis: number; sessionTtlMillis: number }): string {
  return (
    `${o.cycles} cycles in ${run.elapsedMillis.toFixed(0)} ms, ` +
    `${run.heartbeatsOk} heartbeats; smallest margin left to a TTL: lock ${run.smallestLockMarginMillis.toFixed(0)} ms, ` +
    `session ${run.smallestSessionMarginMillis.toFixed(0)} ms of ${o.lockTtlMillis}/${o.sessionTtlMillis}; ` +
    `slowest request ${run.slowestRequest}; unproven cycles ${o.cycles - run.provenCycles}, lapsed sessions ${run.lapsedSessions}`
  );
}

/**
 * No early grant or expiry was seen, the fence accepted every write, and enough was proven for the
 * run to count: each cycle needs its requests answered within the lock TTL (a quiet machine: tens of
 * ms), each heartbeat round within the session TTL. `writesPerCycle`: the fenced writes of a proven cycle.
 */
export function expectSkewRunHeld(
  run: SkewCyclesResult,
  o: { cycles: number; workers: number; writesPerCycle: number },
  expect: typeof import('vitest').expect,
): void {
  expect(run.problems.slice(0, 10)).toEqual([]);
  expect(run.recorder.rejected).toEqual([]);
  expect(run.recorder.accepted).toBe(run.writes);
  expect(run.writes).toBeGreaterThanOrEqual(o.writesPerCycle * run.provenCycles);
  expect(run.provenCycles).toBeGreaterThanOrEqual(o.cycles / 2);
  expect(run.provenSessions).toBeGreaterThanOrEqual(o.workers);
}
