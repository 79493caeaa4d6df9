/**
 * `holdfast server`: start from the environment, stop gracefully on SIGTERM/SIGINT.
 * Tracing starts first (when the OTEL_* environment asks for it) so every span
 * the server makes has a provider, and is flushed after the server has stopped.
 */
import path from 'node:path';
import { loadConfig } from '../lock/config.js';
import { lockDataDir } from '../lock/store/sql/data-dir-lock.js';
import type { Tracing } from '../exporter/tracing.js';

export async function runServer(): Promise<void> {
  const config = loadConfig();
  // One server per embedded data directory: refuse a second one before loading the rest of
  // the server (the store takes the same, already-held lock again when it opens the directory).
  const dataDirLock = config.HOLDFAST_STORE === 'embedded' ? await lockDataDir(path.resolve(config.HOLDFAST_DATA_DIR)) : null;
  const { tracingWanted } = await import('../exporter/tracing-wanted.js');
  const wanted = tracingWanted(process.env);
  const tracing: Tracing | null = wanted.enabled ? (await import('../exporter/tracing.js')).startTracing() : null;
  const { startHoldfastServer } = await import('../server/holdfast-server.js');
  process.stderr.write(`holdfast: tracing ${wanted.enabled ? 'on' : 'off'} (${wanted.reason})\n`);
  const server = await startHoldfastServer(config);
  process.stderr.write(`holdfast: serving on ${server.url} (store: ${config.HOLDFAST_STORE})\n`);
  if (server.localTokenFile) {
    process.stderr.write(`holdfast: operator token for this embedded store is in ${server.localTokenFile}\n`);
  }
  let signalled = false;
  const stop = (signal: string) => {
    if (signalled) return;
    signalled = true;
    server.events.emit('server_stopping', { requestId: 'shutdown' }, { signal });
    server
      .stop()
      .then(() => tracing?.shutdown())
      .then(() => dataDirLock?.release())
      // pino writes asynchronously: flush, or process.exit can drop the last event lines.
      .then(() => new Promise<void>((resolve) => server.events.logger.flush(() => resolve())))
      .then(() => process.exit(0))
      .catch((error: Error) => {
        process.stderr.write(`holdfast: shutdown failed: ${error.message}\n`);
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
