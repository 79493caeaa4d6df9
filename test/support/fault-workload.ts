/**
 * The workload behind the fault suite: SDK workers taking a few contended keys
 * in turn and writing to a fenced resource under each grant, with every HTTP
 * answer counted by endpoint and status. What a fault test asserts: no write
 * refused by the fence (FencedResourceRecorder), no two grants of one key
 * overlapping (findOverlaps), grants resuming after the fault.
 */
import { LockClient } from '../../client/client.js';
import { EndpointsTransport } from '../../client/endpoints.js';
import { FetchTransport } from '../../client/transport.js';
import { FencedResourceRecorder, findOverlaps, holdThroughFence, observedNow, type ObservedGrant } from './fenced-resource.js';

export interface WorkloadOptions {
  /** Instances of one service; the client moves between them as `baseUrl: [...]` does. */
  urls: string[];
  workers: number;
  keys: number;
  keyPrefix: string;
  sessionTtlMillis: number;
  lockTtlMillis: number;
  /** Time spent "working" under each grant. */
  workMillis: number;
  /** Budget of one acquire call. */
  acquireBudgetMillis?: number;
}

export interface Workload {
  readonly recorder: FencedResourceRecorder;
  readonly grants: ObservedGrant[];
  /** `endpoint status` → count; `endpoint failed` for requests with no answer. */
  readonly requests: Map<string, number>;
  /** Errors thrown to the workers by the SDK, by name and message. */
  readonly errors: Map<string, number>;
  sessionsLost: number;
  handlesLost: number;
  /** Resolves when every worker has stopped (after stop()). */
  stop(): Promise<void>;
  overlaps(): string[];
  /** Client time of the first grant that arrived after `t` (ms since epoch), if any. */
  firstGrantAfter(t: number): number | undefined;
  /** Grants that arrived after `t` (ms since epoch). */
  grantsAfter(t: number): number;
  /**
   * Resolves true once at least `count` grants arrived after `t`, or false at `withinMillis`:
   * "service resumed" as an outcome, however slow the machine (the deadline only bounds a
   * failing test), instead of a count of grants inside a fixed window.
   */
  resumed(t: number, count: number, withinMillis: number): Promise<boolean>;
  /** A line of figures for the test output. */
  summary(): string;
}

export function countingFetch(requests: Map<string, number>, label: string): typeof fetch {
  return async (input, init) => {
    try {
      const response = await fetch(input, init);
      const k = `${label} ${response.status}`;
      requests.set(k, (requests.get(k) ?? 0) + 1);
      return response;
    } catch (error) {
      const k = `${label} failed`;
      requests.set(k, (requests.get(k) ?? 0) + 1);
      throw error;
    }
  };
}

export function startWorkload(options: WorkloadOptions): Workload {
  const requests = new Map<string, number>();
  const errors = new Map<string, number>();
  const recorder = new FencedResourceRecorder();
  const grants: ObservedGrant[] = [];
  const transports = options.urls.map((url, i) => new FetchTransport(url, countingFetch(requests, String.fromCharCode(65 + i))));
  const client = new LockClient({ transport: new EndpointsTransport(transports) });
  let running = true;
  const countError = (error: unknown) => {
    const k = `${(error as Error).name}: ${(error as Error).message.slice(0, 80)}`;
    errors.set(k, (errors.get(k) ?? 0) + 1);
  };
  const report: Workload = {
    recorder,
    grants,
    requests,
    errors,
    sessionsLost: 0,
    handlesLost: 0,
    async stop() {
      running = false;
      await Promise.all(workers);
    },
    overlaps: () => findOverlaps(grants),
    firstGrantAfter: (t) => grants.map((g) => g.grantedAt).filter((g) => g > t).sort((a, b) => a - b)[0],
    grantsAfter: (t) => grants.filter((g) => g.grantedAt > t).length,
    async resumed(t, count, withinMillis) {
      const deadline = Date.now() + withinMillis;
      while (report.grantsAfter(t) < count) {
        if (Date.now() > deadline) return false;
        await new Promise((r) => setTimeout(r, 20));
      }
      return true;
    },
    summary: () =>
      `requests ${JSON.stringify(Object.fromEntries([...requests].sort()))}; grants ${grants.length}; ` +
      `fenced writes accepted ${recorder.accepted}, refused ${recorder.rejected.length}; overlaps ${findOverlaps(grants).length}; ` +
      `sessions lost ${report.sessionsLost}, handles lost ${report.handlesLost}; errors ${JSON.stringify(Object.fromEntries(errors))}`,
  };

  const worker = async (w: number) => {
    let session: Awaited<ReturnType<LockClient['openSession']>> | undefined;
    while (running) {
      try {
        if (!session || session.lost) {
          if (session?.lost) report.sessionsLost += 1;
          session = await client.openSession({ ttlMillis: options.sessionTtlMillis, owner: `worker-${w}` });
        }
        const key = `${options.keyPrefix}/${(w + grants.length) % options.keys}`;
        const requestedAt = observedNow();
        const handle = await session.acquire(key, {
          ttlMillis: options.lockTtlMillis,
          policy: { totalBudgetMillis: options.acquireBudgetMillis ?? 5_000, maxAttempts: 1_000 },
        });
        if (!handle) continue;
        const grantedAt = observedNow();
        const { lost, releasedAt } = await holdThroughFence(recorder, key, handle, options.workMillis);
        if (lost) report.handlesLost += 1;
        grants.push({ key, token: BigInt(handle.fencingToken), requestedAt, grantedAt, releasedAt });
        await session.release(handle).catch(countError);
      } catch (error) {
        countError(error);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    await session?.close().catch(() => {});
  };
  const workers = Array.from({ length: options.workers }, (_, w) => worker(w));
  return report;
}
