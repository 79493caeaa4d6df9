/**
 * JSON-line events from child processes (campaigners, CLI runs), each stamped with the
 * test process's monotonic time when it arrived, and a bounded wait for one that matches.
 */
import type { ChildProcess } from 'node:child_process';

export type Stamped<T> = T & { at: number };

export class EventLog<T extends object> {
  readonly events: Stamped<T>[] = [];
  readonly #waiters = new Set<() => void>();

  /** Read `child`'s stdout as JSON lines (other lines are ignored); `onEvent` runs on each as it arrives. */
  attach(child: ChildProcess, onEvent: (event: Stamped<T>) => void = () => {}): void {
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (!line.startsWith('{')) continue;
        const event = { ...(JSON.parse(line) as T), at: performance.now() };
        this.events.push(event);
        onEvent(event);
        for (const wake of this.#waiters) wake();
      }
    });
  }

  /** The first event (already logged or yet to come) that matches; rejects after `timeoutMillis`. */
  waitFor(match: (event: Stamped<T>) => boolean, timeoutMillis: number, what = 'an event'): Promise<Stamped<T>> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        const found = this.events.find(match);
        if (found === undefined) return false;
        this.#waiters.delete(onEvent);
        clearTimeout(timer);
        resolve(found);
        return true;
      };
      const onEvent = (): void => void check();
      const timer = setTimeout(() => {
        this.#waiters.delete(onEvent);
        reject(new Error(`${what} did not come within ${timeoutMillis} ms; events: ${JSON.stringify(this.events.slice(-20))}`));
      }, timeoutMillis);
      if (!check()) this.#waiters.add(onEvent);
    });
  }
}
