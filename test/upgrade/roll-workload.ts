/**
 * The SDK workload a rolling upgrade runs under: workers on multi-endpoint clients taking a few
 * shared keys in turn (half of them waiting on the server, half retrying from the client) and writing
 * to the fenced-resource oracle under each grant. Every HTTP answer is counted by endpoint, by the
 * release serving that endpoint at the time, and by status; every acquire's end is recorded (a grant,
 * not granted, or the error it threw), and one that does not end within its budget plus a margin is
 * recorded as hung instead of stalling the worker.
 *
 * The previous release (cb3da0c) gives back a grant a release handed to a wait that left without it
 * (its caller gone, or the instance draining). The caller's retry on the other instance may be answered
 * that grant first (L4 is idempotent per session), and then it is freed under its holder: an overlap the
 * fence refuses. This release leaves such a grant with its session (test/http/handoff-at-the-end.test.ts).
 * A grant whose acquire call had a waiting attempt an instance of the previous release left without an
 * answer or with a 503 is marked: what the roll asserts of this release leaves those out, and the
 * summary counts them.
 */
import type * as Sdk from '../../client/index.js';
import { FencedResourceRecorder, findOverlaps, findTokenOrderViolations, holdThroughFence, observedNow, type ObservedGrant } from '../support/fenced-resource.js';

/** One address the client knows; the instance behind it is replaced during the roll. */
export interface RollEndpoint {
  label: string;
  url: string;
  /** Which release answers here now ('old' / 'new'; 'down' between the two). */
  release: string;
}

/**
 * The SDK parts a worker uses: this checkout's `client/`, or the previous release's compiled SDK
 * (its dist/client/index.js), so clients of both releases run through the roll.
 */
export interface RollSdk {
  name: string;
  LockClient: typeof Sdk.LockClient;
  EndpointsTransport: typeof Sdk.EndpointsTransport;
  FetchTransport: typeof Sdk.FetchTransport;
}

export interface RollWorkloadOptions {
  endpoints: RollEndpoint[];
  /** Worker pairs take turns over these (each pair: one waiting on the server, one retrying from the client). */
  sdks: RollSdk[];
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

/** A grant as the workload saw it. */
export interface RollGrant extends ObservedGrant {
  /** In its acquire call, a waiting attempt was left by a previous-release instance (503, or no answer). */
  afterOldWaitLeft: boolean;
}

/** How one acquire call ended. */
export type AcquireEnd = 'granted' | 'not_granted' | 'hung' | `error ${string}`;

export interface RollWorkload {
  readonly recorder: FencedResourceRecorder;
  readonly grants: RollGrant[];
  /** `label/release status` → count; `label/release failed` for requests that got no answer. */
  readonly answers: Map<string, number>;
  /** How acquire calls ended → count. */
  readonly acquireEnds: Map<AcquireEnd, number>;
  /** Grants by the SDK that made them. */
  readonly grantsBySdk: Map<string, number>;
  /** Errors the SDK threw outside acquire (open, release, close), by code. */
  readonly otherErrors: Map<string, number>;
  acquiresStarted: number;
  sessionsLost: number;
  handlesLost: number;
  /** Resolves once at least `count` grants arrived after `t`, or false at `withinMillis`. */
  grantsAfter(t: number, count: number, withinMillis: number): Promise<boolean>;
  stop(): Promise<void>;
  /** Refused writes, leaving out those of grants `afterOldWaitLeft` (the previous release's give-back). */
  staleWrites(): { key: string; token: string; highest: string }[];
  /** Overlaps among grants not `afterOldWaitLeft`. */
  overlaps(): string[];
  tokenOrderViolations(): string[];
  /** 2xx answers each release gave since `snapshot` (a copy of `answers` taken earlier). */
  servedSince(snapshot: ReadonlyMap<string, number>): Record<string, number>;
  /** Status codes of 500 and above other than 503, with their counts. */
  serverErrors(): [string, number][];
  summary(): string;
}

/** By the SDK error's `code` (and status and server code for a ServerError): classes differ between the two SDKs. */
function errorLabel(error: unknown): string {
  const e = error as { code?: unknown; status?: unknown; serverCode?: unknown; name?: string; message?: string };
  if (typeof e.code === 'string') return [e.code, e.status, e.serverCode].filter((part) => part !== undefined).join(' ');
  return `${e.name}: ${String(e.message).slice(0, 100)}`;
}

export function startRollWorkload(options: RollWorkloadOptions): RollWorkload {
  const answers = new Map<string, number>();
  const acquireEnds = new Map<AcquireEnd, number>();
  const otherErrors = new Map<string, number>();
  const grantsBySdk = new Map<string, number>();
  const recorder = new FencedResourceRecorder();
  const grants: RollGrant[] = [];
  /** Per worker: whether the acquire call under way had a waiting attempt a previous-release instance left. */
  const oldWaitLeft = new Map<number, boolean>();
  const bump = <K>(map: Map<K, number>, key: K) => map.set(key, (map.get(key) ?? 0) + 1);

  const countingFetch =
    (endpoint: RollEndpoint, worker: number, waits: boolean): typeof fetch =>
      async (input, init) => {
        const release = endpoint.release;
        const waitingAttempt = waits && release === 'old' && String(input).endsWith('/acquire');
        try {
          const response = await fetch(input, init);
          bump(answers, `${endpoint.label}/${release} ${response.status}`);
          if (waitingAttempt && response.status === 503) oldWaitLeft.set(worker, true);
          return response;
        } catch (error) {
          bump(answers, `${endpoint.label}/${release} failed`);
          if (waitingAttempt) oldWaitLeft.set(worker, true);
          throw error;
        }
      };
  /**
   * A client's endpoint list starting at `first`. The SDK stays on an endpoint until it fails, so with
   * one list every request would follow the same instance: rotated lists, renewed as sessions turn over,
   * keep both instances (and so both releases, mid-roll) serving at once, as a load balancer would.
   */
  const clientStartingAt = (sdk: RollSdk, first: number, worker: number, waits: boolean) => {
    const n = options.endpoints.length;
    const rotated = options.endpoints.map((_, i) => options.endpoints[(first + i) % n]!);
    return new sdk.LockClient({
      transport: new sdk.EndpointsTransport(rotated.map((e) => new sdk.FetchTransport(e.url, countingFetch(e, worker, waits)))),
    });
  };
  const ownGrants = () => grants.filter((g) => !g.afterOldWaitLeft);
  const markedTokens = () => new Set(grants.filter((g) => g.afterOldWaitLeft).map((g) => `${g.key} ${g.token}`));
  let running = true;

  const report: RollWorkload = {
    recorder,
    grants,
    answers,
    acquireEnds,
    otherErrors,
    grantsBySdk,
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
    staleWrites: () => {
      const marked = markedTokens();
      return recorder.rejected.filter((write) => !marked.has(`${write.key} ${write.token}`));
    },
    overlaps: () => findOverlaps(ownGrants()),
    tokenOrderViolations: () => findTokenOrderViolations(grants),
    serverErrors: () =>
      [...answers].filter(([k]) => {
        const status = Number(k.split(' ')[1]);
        return status >= 500 && status !== 503;
      }),
    summary: () =>
      `answers ${JSON.stringify(Object.fromEntries([...answers].sort()))}; acquires ${report.acquiresStarted} ` +
      `${JSON.stringify(Object.fromEntries(acquireEnds))}; grants ${grants.length} ${JSON.stringify(Object.fromEntries(grantsBySdk))}; fenced writes accepted ${recorder.accepted}, ` +
      `refused ${recorder.rejected.length}; overlaps ${findOverlaps(grants).length}; grants after a previous-release wait left ` +
      `${grants.length - ownGrants().length} (their refused writes ${recorder.rejected.length - report.staleWrites().length}, ` +
      `overlaps among the rest ${findOverlaps(ownGrants()).length}); sessions lost ${report.sessionsLost}, ` +
      `handles lost ${report.handlesLost}; other errors ${JSON.stringify(Object.fromEntries(otherErrors))}`,
  };

  const worker = async (w: number) => {
    // Half the workers park on the server (a wait that a release through either release's instance must wake).
    const waitMillis = w % 2 === 0 ? Math.min(2_000, options.acquireBudgetMillis) : 0;
    const sdk = options.sdks[Math.floor(w / 2) % options.sdks.length]!;
    let session: Awaited<ReturnType<Sdk.LockClient['openSession']>> | undefined;
    let generation = 0;
    for (let n = 0; running && n < options.maxAcquiresPerWorker; n++) {
      try {
        if (session && !session.lost && n % options.acquiresPerSession === 0) {
          await session.close().catch((error: unknown) => bump(otherErrors, `${sdk.name} SDK close ${errorLabel(error)}`));
          session = undefined;
        }
        if (!session || session.lost) {
          if (session?.lost) report.sessionsLost += 1;
          const client = clientStartingAt(sdk, w + generation++, w, waitMillis > 0);
          session = await client.openSession({ ttlMillis: options.sessionTtlMillis, owner: `roll-worker-${w}` });
        }
      } catch (error) {
        bump(otherErrors, `${sdk.name} SDK open ${errorLabel(error)}`);
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      const key = `${options.keyPrefix}/${(w + n) % options.keys}`;
      const requestedAt = observedNow();
      oldWaitLeft.set(w, false);
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
        bump(acquireEnds, `error ${sdk.name} SDK ${errorLabel(ended.error)}`);
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      const handle = ended.handle;
      if (!handle) {
        bump(acquireEnds, 'not_granted');
        continue;
      }
      bump(acquireEnds, 'granted');
      bump(grantsBySdk, sdk.name);
      const grantedAt = observedNow();
      const afterOldWaitLeft = oldWaitLeft.get(w) === true;
      const { lost, releasedAt } = await holdThroughFence(recorder, key, handle, options.workMillis);
      if (lost) report.handlesLost += 1;
      grants.push({ key, token: BigInt(handle.fencingToken), requestedAt, grantedAt, releasedAt, afterOldWaitLeft });
      await session.release(handle).catch((error: unknown) => bump(otherErrors, `${sdk.name} SDK release ${errorLabel(error)}`));
    }
    await session?.close().catch((error: unknown) => bump(otherErrors, `${sdk.name} SDK close ${errorLabel(error)}`));
  };
  const workers = Array.from({ length: options.workers }, (_, w) => worker(w));
  return report;
}
