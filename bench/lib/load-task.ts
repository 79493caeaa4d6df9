/** What the load worker is asked to do, and what it answers. Plain data: it crosses a thread boundary. */

export interface TimingWindow {
  /** Cycles completing in the warm-up are not counted (JIT, connection set-up). */
  warmupSeconds: number;
  seconds: number;
}

export type KeyPattern =
  /** Each worker its own key: every acquire is uncontended. */
  | { kind: 'own' }
  /** Worker i uses key i mod `hotKeys`: acquires contend and wait server-side. */
  | { kind: 'hot'; hotKeys: number; waitMillis: number }
  /**
   * Every worker on one multi-holder key (issue 23), through the SDK only: a semaphore
   * (`limit` N, exclusive) or shared grants (`mode` shared); those not admitted wait server-side.
   */
  | { kind: 'multi'; holding: { mode?: 'exclusive' | 'shared'; limit?: number }; waitMillis: number };

export type HttpClientKind = 'lean' | 'node';

/**
 * How the SDK rows send: `default` is what `new LockClient({ baseUrl })` picks (for http:, bare
 * kept-alive sockets: KeepAliveHttpTransport), `node-http` NodeHttpTransport (node:http, the default
 * before stop 42), `fetch` the FetchTransport it used before issue 22 (the comparisons).
 */
export type SdkTransportKind = 'default' | 'node-http' | 'fetch';

export type LoadTarget =
  /** Holdfast over HTTP. */
  | { target: 'http'; url: string; keys: KeyPattern; client: HttpClientKind }
  /**
   * Holdfast through @holdfast/client, as an application uses it: one LockClient for the
   * worker, each of its concurrent loops its own session; `session.acquire` then
   * `session.release`. Hot keys use the SDK's policy with the server-side wait.
   */
  | { target: 'sdk'; url: string; keys: KeyPattern; transport: SdkTransportKind }
  /** The raw backend from a `pg` pool; `coalesce` = the multi-row prototype. */
  | { target: 'raw'; databaseUrl: string; coalesce: boolean }
  /** Holdfast's SQL store called in-thread, no HTTP, no core: the SQL's own cost. */
  | { target: 'store'; databaseUrl: string }
  /**
   * Hot-key handoff through HTTP: `concurrency` waiters on one key, each holding it
   * `holdMillis`, then pausing `rejoinMillis` before waiting again; a cycle is one handoff,
   * timed from the holder sending its release to the next waiter's grant. `background`:
   * unrelated raw writes on the same PostgreSQL meanwhile.
   */
  | {
      target: 'handoff';
      url: string;
      holdMillis: number;
      rejoinMillis: number;
      waitMillis: number;
      background?: { databaseUrl: string; cyclesPerSecond: number };
    }
  /** etcd3's own lock recipe (`client.lock(key)`: a lease per acquire, revoked on release), one key per worker. */
  | { target: 'etcd-lock'; endpoints: string[] }
  /**
   * A trivial etcd client doing what Holdfast's etcd store asks of etcd per cycle, with nothing
   * else: a create-if-absent txn, then a compare-and-delete txn, one key per worker. The ceiling of
   * "one txn per acquire, one per release" on this etcd.
   */
  | { target: 'etcd-raw'; endpoints: string[] };

export type LoadTask = LoadTarget & TimingWindow & { concurrency: number; keyPrefix: string };

export type WorkerMessage =
  | { type: 'measuring' }
  | { type: 'measured' }
  | {
      type: 'result';
      /** Acquire start → release answered, for cycles completing inside the measured window. */
      latenciesMillis: number[];
      /** Non-success answers by `status code`, counted over the whole run. */
      errors: Record<string, number>;
      /** Coalesced cells: mean rows per statement. */
      meanBatchSize?: number;
      /** Handoff cells: each acquire's own wait (sent → granted), for the starvation check. */
      waitsMillis?: number[];
      /** CPU of the load worker's own thread inside the measured window: the client's cost alone. */
      clientThreadCpuMillis: number | null;
    }
  | { type: 'failed'; message: string };
