/**
 * One dedicated PostgreSQL connection (not from the pool) that LISTENs on a channel for
 * the life of the server. A pooled client cannot listen: it goes back to the pool between
 * queries. An idle listening connection would not notice a black-holed network, so it
 * probes with a short query; on any loss it reports down and re-listens with backoff.
 */
import pg from 'pg';
import type { NotificationHandlers } from './queryable.js';

export interface PgListenerOptions {
  connectTimeoutMillis?: number;
  /** How often the idle connection proves it is alive. */
  probeEveryMillis?: number;
  /** Reconnect backoff: first delay and ceiling (full jitter between them). */
  backoffBaseMillis?: number;
  backoffMaxMillis?: number;
}

export class PgListener {
  private stopped = false;
  private readonly stop = new AbortController();
  private running: Promise<void> | undefined;

  constructor(
    private readonly connectionString: string,
    private readonly channel: string,
    private readonly handlers: NotificationHandlers,
    private readonly options: PgListenerOptions = {},
  ) {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`not a plain channel name: ${channel}`);
  }

  /** Resolves once the first attempt to listen has ended, whichever way. */
  start(): Promise<void> {
    return new Promise((firstAttempt) => {
      this.running = this.run(firstAttempt);
    });
  }

  async close(): Promise<void> {
    this.stopped = true;
    this.stop.abort();
    await this.running;
  }

  private async run(firstAttempt: () => void): Promise<void> {
    let failures = 0;
    let up = false;
    while (!this.stopped) {
      const client = new pg.Client({
        connectionString: this.connectionString,
        connectionTimeoutMillis: this.options.connectTimeoutMillis ?? 1500,
        query_timeout: 2000,
        keepAlive: true,
        // Operators (and tests) can tell it apart in pg_stat_activity.
        application_name: 'holdfast-listener',
      });
      let lose!: (cause: string) => void;
      const lost = new Promise<string>((resolve) => (lose = resolve));
      client.on('error', (error: Error) => lose(error.message));
      client.on('end', () => lose('connection ended'));
      client.on('notification', (message) => {
        if (message.channel === this.channel && message.payload) this.handlers.notify(message.payload);
      });
      let probe: NodeJS.Timeout | undefined;
      let cause: string;
      try {
        await client.connect();
        await client.query(`LISTEN ${this.channel}`);
        failures = 0;
        up = true;
        this.handlers.health(true, 'listening');
        firstAttempt();
        probe = setInterval(() => {
          client.query('SELECT 1').catch((error: Error) => lose(`probe failed: ${error.message}`));
        }, this.options.probeEveryMillis ?? 1000);
        const stopped = new Promise<string>((resolve) => this.stop.signal.addEventListener('abort', () => resolve('stopped'), { once: true }));
        cause = await Promise.race([lost, stopped]);
      } catch (error) {
        cause = (error as Error).message;
      } finally {
        clearInterval(probe);
      }
      // Not awaited: on a black-holed network end() itself could hang.
      client.end().catch(() => {});
      if (this.stopped) break;
      if (up || failures === 0) this.handlers.health(false, cause);
      up = false;
      firstAttempt();
      failures++;
      const cap = Math.min(this.options.backoffMaxMillis ?? 5000, (this.options.backoffBaseMillis ?? 100) * 2 ** Math.min(failures, 10));
      await sleep(Math.random() * cap, this.stop.signal);
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}
