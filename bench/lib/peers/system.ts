/**
 * What the peers bench asks of each lock system it compares (Holdfast through its SDK on
 * each store, etcd3's lock recipe, pg_advisory_lock, Redlock). Each system takes locks the
 * way its users would; the cell runner (cell.ts) times cycles and reads CPU around them.
 */

/** Every worker its own key (nothing contends), or workers sharing a few hot keys. */
export type CellMode = 'own' | 'hot';

export type SystemId = 'holdfast-embedded' | 'holdfast-postgres' | 'holdfast-etcd' | 'etcd3-lock' | 'pg-advisory' | 'redlock';

/** A granted lock, to be given back. */
export interface Held {
  release(): Promise<void>;
}

/** The clients of one cell: connected (sessions opened, pools filled) before the window opens. */
export interface PeerLoad {
  /**
   * Takes `key` for `worker`, waiting or retrying as the system's users would on a held key,
   * within the bench's wait budget. `null`: not granted within it. Throws on anything else.
   */
  acquire(worker: number, key: string): Promise<Held | null>;
  close(): Promise<void>;
}

export interface PeerSystem {
  readonly id: SystemId;
  /** The row label in every table. */
  readonly label: string;
  /**
   * CPU milliseconds used so far by each server-side process of this system, by role
   * (e.g. `{ 'holdfast server': …, postgres: … }`), read from /proc; the runner takes the
   * difference across the measured window.
   */
  serverCpuMillis(): Record<string, number>;
  open(workers: number, mode: CellMode): Promise<PeerLoad>;
}
