/**
 * Everything the peers bench starts (PostgreSQL clusters, etcd members, Holdfast servers,
 * redis-server) is registered here as it starts and stopped in reverse order at the end —
 * also on an error or on Ctrl-C, so a failed run leaves no process or temporary directory behind.
 */
export class Cleanup {
  readonly #stops: Array<{ what: string; stop: () => Promise<void> }> = [];
  #running: Promise<void> | undefined;

  add(what: string, stop: () => Promise<void>): void {
    this.#stops.push({ what, stop });
  }

  /** Stops everything registered, newest first; logs (never throws) what failed to stop. Idempotent. */
  run(): Promise<void> {
    this.#running ??= (async () => {
      for (const { what, stop } of this.#stops.reverse()) {
        try {
          await stop();
        } catch (error) {
          console.error(`peers bench: stopping ${what} failed: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
    })();
    return this.#running;
  }

  /** On SIGINT/SIGTERM: stop everything, then exit (130 / 143). */
  stopOnSignals(): void {
    for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
      process.once(signal, () => {
        console.error(`\npeers bench: ${signal}, stopping what it started…`);
        void this.run().finally(() => process.exit(code));
      });
    }
  }
}
