/**
 * Types for `redlock` 5.0.0-beta.2. The package ships them (dist/index.d.ts) but its `exports`
 * map has no `types` condition, so TypeScript's resolution (tsconfig: "Bundler") reaches the
 * untyped dist/esm/index.js and, under `strict`, refuses the import. An ambient declaration is
 * consulted before package resolution, so this copy of the part the bench uses (same names and
 * signatures as the package's own file) stands in for it.
 */
declare module 'redlock' {
  import { EventEmitter } from 'node:events';
  import type { Cluster, Redis } from 'ioredis';

  type Client = Redis | Cluster;

  export interface Settings {
    readonly driftFactor: number;
    readonly retryCount: number;
    readonly retryDelay: number;
    readonly retryJitter: number;
    readonly automaticExtensionThreshold: number;
  }

  export type ExecutionStats = {
    readonly membershipSize: number;
    readonly quorumSize: number;
    readonly votesFor: Set<Client>;
    readonly votesAgainst: Map<Client, Error>;
  };

  export type ExecutionResult = { attempts: ReadonlyArray<Promise<ExecutionStats>> };

  /** One client refused the operation because a resource is held (emitted per failed attempt). */
  export class ResourceLockedError extends Error {
    constructor(message: string);
  }

  /** No quorum within the retries. */
  export class ExecutionError extends Error {
    readonly attempts: ReadonlyArray<Promise<ExecutionStats>>;
    constructor(message: string, attempts: ReadonlyArray<Promise<ExecutionStats>>);
  }

  export class Lock {
    readonly redlock: Redlock;
    readonly resources: string[];
    readonly value: string;
    readonly attempts: ReadonlyArray<Promise<ExecutionStats>>;
    expiration: number;
    release(): Promise<ExecutionResult>;
    extend(duration: number): Promise<Lock>;
  }

  export default class Redlock extends EventEmitter {
    readonly clients: Set<Client>;
    readonly settings: Settings;
    constructor(clients: Iterable<Client>, settings?: Partial<Settings>);
    quit(): Promise<void>;
    acquire(resources: string[], duration: number, settings?: Partial<Settings>): Promise<Lock>;
    release(lock: Lock, settings?: Partial<Settings>): Promise<ExecutionResult>;
    extend(existing: Lock, duration: number, settings?: Partial<Settings>): Promise<Lock>;
  }
}
