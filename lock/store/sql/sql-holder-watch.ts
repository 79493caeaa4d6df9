/**
 * L8's holder feed in SQL (spi.ts HolderWatch): an instance with a parked watch on a key keeps a
 * row in holdfast_watches, and every new token or ended grant of a watched key NOTIFYs it on the
 * holders channel in its own transaction (migration 12: the granting and handing-off statements
 * themselves, and the release trigger for every deleted grant). Every instance LISTENs once; a
 * notification wakes the watches parked on that key here. A grant made by a release from before
 * migration 12 (a rolling upgrade) notifies nothing: the watch's periodic re-read sees it.
 *
 * - A watch's row is committed (and the channel listened) before `watch` resolves: core reads after
 *   that, so no change falls between its read and its park.
 * - Rows of keys no watch here parks on any more are deleted now and then; inserts and deletes go
 *   through one queue, so a delete never lands after a newer insert of the same key.
 * - A lost listening connection answers every parked watch `fallback` (core re-reads on its own).
 */
import type { HolderWatch, HolderWatchSubscription } from '../spi.js';
import type { SqlDatabase } from './queryable.js';

export const HOLDERS_CHANNEL = 'holdfast_holders';
/** How often rows of keys no watch parks on any more are deleted. */
const CLEANUP_EVERY_MILLIS = 30_000;

type Settle = (how: 'changed' | 'fallback') => void;

export class SqlHolderWatch implements HolderWatch {
  private readonly parked = new Map<string, Set<Settle>>();
  private listening: Promise<void> | null = null;
  private up = false;
  /** Registration statements, one at a time, in order. */
  private queue: Promise<unknown> = Promise.resolve();
  private cleanup: NodeJS.Timeout | null = null;

  constructor(private readonly db: SqlDatabase) {}

  async watch(req: { key: string; instanceId?: string }): Promise<HolderWatchSubscription> {
    if (req.instanceId === undefined || !this.db.listen) return unpromised();
    await this.listen();
    if (!this.up) return unpromised();
    const instanceId = req.instanceId;
    // A row whose instance is not registered (yet, or any more) fails its foreign key: no promise then.
    const registered = await this.enqueue(() =>
      this.db
        .query(
          `WITH added AS (
             INSERT INTO holdfast_watches (key, instance_id)
             SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM holdfast_instances WHERE instance_id = $2)
             ON CONFLICT DO NOTHING RETURNING 1)
           SELECT EXISTS (SELECT 1 FROM added) OR EXISTS (SELECT 1 FROM holdfast_watches WHERE key = $1 AND instance_id = $2) AS registered`,
          [req.key, instanceId],
        )
        .then(
          (rows) => rows[0]?.registered === true,
          () => false,
        ),
    );
    if (!registered) return unpromised();
    this.scheduleCleanup(instanceId);
    let settle: Settle = () => {};
    const changed = new Promise<'changed' | 'fallback'>((resolve) => (settle = resolve));
    const waiting = this.parked.get(req.key) ?? new Set<Settle>();
    waiting.add(settle);
    this.parked.set(req.key, waiting);
    return {
      changed,
      stop: () => {
        settle('fallback');
        waiting.delete(settle);
        if (waiting.size === 0 && this.parked.get(req.key) === waiting) this.parked.delete(req.key);
      },
    };
  }

  private listen(): Promise<void> {
    this.listening ??= this.db.listen!(HOLDERS_CHANNEL, {
      notify: (key) => {
        for (const settle of this.parked.get(key) ?? []) settle('changed');
      },
      health: (up) => {
        this.up = up;
        if (!up) for (const waiting of this.parked.values()) for (const settle of waiting) settle('fallback');
      },
    }).then(() => undefined);
    return this.listening;
  }

  private enqueue<T>(statement: () => Promise<T>): Promise<T> {
    const run = this.queue.then(statement);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private scheduleCleanup(instanceId: string): void {
    if (this.cleanup) return;
    this.cleanup = setInterval(() => {
      const keys = [...this.parked.keys()];
      void this.enqueue(() =>
        this.db.query('DELETE FROM holdfast_watches WHERE instance_id = $1 AND NOT (key = ANY($2::text[]))', [instanceId, keys]),
      ).catch(() => {});
    }, CLEANUP_EVERY_MILLIS);
    this.cleanup.unref();
  }
}

/** A subscription that promises nothing: core re-reads on its own schedule. */
function unpromised(): HolderWatchSubscription {
  return { changed: Promise.resolve('fallback'), stop: () => {} };
}
