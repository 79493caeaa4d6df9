/**
 * The SDK workload a rolling upgrade runs under: workers on multi-endpoint clients taking a few
 * shared keys in turn (half of them waiting on the server, half retrying from the client) and writing
 * to the fenced-resource oracle under each grant. Every HTTP answer is counted by endpoint, by the
 * release serving that endpoint at the time, and by status; every acquire's end is recorded (a grant,
 * not granted, or the error it threw), and one that does not end within its budget plus a margin is
 * recorded as hung instead of stalling the worker.
 */
import { LockClient } from '../../client/client.js';
import { EndpointsTransport } from '../../client/endpoints.js';
import { HoldfastClientError, ServerError } from '../../client/errors.js';
import { FetchTransport } from '../../client/transport.js';
import { FencedResourceRecorder, findOverlaps, findTokenOrderViolations, type ObservedGrant } from '../support/fenced-resource.js';

/** One address the client knows; the instance behind it is replaced during the roll. */
export interface RollEndpoint {
  label: string;
  url: string;
  /** Which release answers here now ('old' / 'new'; 'down' between the two). */
  release: string;
}

export interface RollWorkloadOptions {
  endpoints: RollEndpoint[];
  workers: number;
  keys: number;
  keyPrefix: string;
  sessionTtlMillis: number;
  lockTtlMillis: number;
  workMillis: number;
  acquireBudgetMillis: number;
  /** A worker closes its session and opens another, through a client starting at the next endpoint, this often. */
  acquiresPerSession: number;
  /** Bounds the run whatever happens: each worker stops after this many acquires. */
  maxAcquiresPerWorker: number;
}

/** How one acquire call ended. */
export type AcquireEnd = 'granted' | 'not_granted' | 'hung' | `error ${string}`;

export interface RollWorkload {
  readonly recorder: FencedResourceRecorder;
  readonly grants: ObservedGrant[];
  /** `label/release status` → count; `label/release failed` for requests that got no answer. */
  readonly answers: Map<string, number>;
  /** How acquire calls ended → count. */
  readonly acquireEnds: Map<AcquireEnd, number>;
  /** Errors the SDK threw outside acquire (open, release, close), by code. */
  readonly otherErrors: Map<string, number>;
  acquiresStarted: number;
  sessionsLost: number;
  handlesLost: number;
  /** Resolves once at least `count` grants arrived after `t`, or false at `withinMillis`. */
  grantsAfter(t: number, count: number, withinMillis: number): Promise<boolean>;
  stop(): Promise<void>;
  overlaps(): string[];
  tokenOrderViolations(): string[];
  /** 2xx answers each release gave since `snapshot` (a copy of `answers` taken earlier). */
  servedSince(snapshot: ReadonlyMap<string, number>): Record<string, number>;
  /** Status codes of 500 and above other than 503, with their counts. */
  serverErrors(): [string, number][];
  summary(): string;
}

function errorLabel(error: unknown): string {
  if (error instanceof ServerError) return `${error.code} ${error.status} ${error.serverCode}`;
  if (error instanceof HoldfastClientError) return error.code;
  return `${(error as Error).name}: ${(error as Error).message.slice(0, 100)}`;
}

export function startRollWorkload(options: RollWorkloadOptions): RollWorkload {
  const answers = new Map<string, number>();
  const acquireEnds = new Map<AcquireEnd, number>();
  const otherErrors = new Map<string, number>();
  const recorder = new FencedResourceRecorder();
  const grants: ObservedGrant[] = [];
  const bump = <K>(map: Map<K, number>, key: K) => map.set(key, (map.get(key) ?? 0) + 1);

  const transports = options.endpoints.map(
    (endpoint) =>
      new FetchTransport(endpoint.url, async (input, init) => {
        const release = endpoint.release;
        try {
          const response = await fetch(input, init);
          bump(answers, `${endpoint.label}/${release} ${response.status}`);
          return response;
        } catch (error) {
          bump(answers, `${endpoint.label}/${release} failed`);
          throw error;
        }
      }),
  );
  /**
   * A client's endpoint list starting at `first`. The SDK stays on an endpoint until it fails, so with
   * one list every request would follow the same instance: rotated lists, renewed as sessions turn over,
   * keep both instances (and so both releases, mid-roll) serving at once, as a load balancer would.
   */
  const clientStartingAt = (first: number) =>
    new LockClient({ transport: new EndpointsTransport(transports.map((_, i) => transports[(first + i) % transports.length]!)) });
  let running = true;

  const report: RollWorkload = {
    recorder,
    grants,
    answers,
    acquireEnds,
    otherErrors,
    acquiresStarted: 0,
    sessionsLost: 0,
    handlesLost: 0,
    async grantsAfter(t, count, withinMillis) {
      const deadline = Date.now() + withinMillis;
      while (grants.filter((g) => g.grantedAt > t).length < count) {
        if (Date.now() > deadline || !running) return false;
        await new Promise((r) => setTimeout(r, 25));
      }
      return true;
    },
    async stop() {
      running = false;
      await Promise.all(workers);
    },
    servedSince(snapshot) {
      const served: Record<string, number> = {};
      for (const [k, count] of answers) {
        const [where, status] = k.split(' ');
        if (!status?.startsWith('2')) continue;
        const release = where!.split('/')[1]!;
        served[release] = (served[release] ?? 0) + count - (snapshot.get(k) ?? 0);
      }
      return served;
    },
    overlaps: () => findOverlaps(grants),
    tokenOrderViolations: () => findTokenOrderViolations(grants),
    serverErrors: () =>
      [...answers].filter(([k]) => {
        const status = Number(k.split(' ')[1]);
        return status >= 500 && status !== 503;
      }),
    summary: () =>
      `answers ${JSON.stringify(Object.fromEntries([...answers].sort()))}; acquires ${report.acquiresStarted} ` +
      `${JSON.stringify(Object.fromEntries(acquireEnds))}; grants ${grants.length}; fenced writes accepted ${recorder.accepted}, ` +
      `refused ${recorder.rejected.length}; overlaps ${findOverlaps(grants).length}; sessions lost ${report.sessionsLost}, ` +
      `handles lost ${report.handlesLost}; other errors ${JSON.stringify(Object.fromEntries(otherErrors))}`,
  };

  const worker = async (w: number) => {
    // Half the workers park on the server (a wait that a release through either release's instance must wake).
    const waitMillis = w % 2 === 0 ? Math.min(2_000, options.acquireBudgetMillis) : 0;
    let session: Awaited<ReturnType<LockClient['openSession']>> | undefined;
    let generation = 0;
    for (let n = 0; running && n < options.maxAcquiresPerWorker; n++) {
      try {
        if (session && !session.lost && n % options.acquiresPerSession === 0) {
          await session.close().catch((error: unknown) => bump(otherErrors, `close ${errorLabel(error)}`));
          session = undefined;
        }
        if (!session || session.lost) {
          if (session?.lost) report.sessionsLost += 1;
          const client = clientStartingAt(w + generation++);
          session = await client.openSession({ ttlMillis: options.sessionTtlMillis, owner: `roll-worker-${w}` });
        }
      } catch (error) {
        bump(otherErrors, `open ${errorLabel(error)}`);
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      const key = `${options.keyPrefix}/${(w + n) % options.keys}`;
      const requestedAt = Date.now();
      report.acquiresStarted += 1;
      const acquiring = session.acquire(key, {
        ttlMillis: options.lockTtlMillis,
        policy: { totalBudgetMillis: options.acquireBudgetMillis, maxAttempts: 1_000, waitMillis },
      });
      let watchdog: NodeJS.Timeout | undefined;
      const hung = new Promise<'hung'>((resolve) => {
        watchdog = setTimeout(() => resolve('hung'), options.acquireBudgetMillis + 30_000);
      });
      const ended = await Promise.race([acquiring.then((handle) => ({ handle }), (error: unknown) => ({ error })), hung]).finally(() =>
        clearTimeout(watchdog),
      );
      if (ended === 'hung') {
        bump(acquireEnds, 'hung');
        session = undefined;
        continue;
      }
      if ('error' in ended) {
        bump(acquireEnds, `error ${errorLabel(ended.error)}`);
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      const handle = ended.handle;
      if (!handle) {
        bump(acquireEnds, 'not_granted');
        continue;
      }
      bump(acquireEnds, 'granted');
      const grantedAt = Date.now();
      let lostAt: number | undefined;
      handle.signal.addEventListener('abort', () => {
        if (handle.lost) lostAt = Date.now();
      });
      recorder.write(key, handle.fencingToken);
      await new Promise((r) => setTimeout(r, options.workMillis));
      // The write a slow holder makes at the end of its work.
      if (!handle.lost) recorder.write(key, handle.fencingToken);
      if (handle.lost) report.handlesLost += 1;
      grants.push({ key, token: BigInt(handle.fencingToken), requestedAt, grantedAt, releasedAt: lostAt ?? Date.now() });
      await session.release(handle).catch((error: unknown) => bump(otherErrors, `release ${errorLabel(error)}`));
    }
    await session?.close().catch((error: unknown) => bump(otherErrors, `close ${errorLabel(error)}`));
  };
  const workers = Array.from({ length: options.workers }, (_, w) => worker(w));
  return report;
}
