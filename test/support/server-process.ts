/**
 * The real `holdfast server` as a child process (the package's bin), for tests
 * of signals, restarts and the CLI.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from './ports.js';

export const BIN = path.resolve(import.meta.dirname, '../../bin/holdfast.js');

export interface ServerProcess {
  url: string;
  port: number;
  child: ChildProcess;
  output: () => string;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>;
}

export interface SpawnOptions {
  /** Listen here (a restart on the port a proxy forwards to); a free port when omitted. */
  port?: number;
  /** Node arguments instead of the package's bin (a test-only entry, e.g. a server with a planted bug). */
  nodeArgs?: string[];
}

export async function spawnServer(env: Record<string, string>, options: SpawnOptions = {}): Promise<ServerProcess> {
  const port = options.port ?? (await freePort());
  const child = spawn(process.execPath, options.nodeArgs ?? [BIN, 'server'], {
    env: { ...process.env, HOLDFAST_PORT: String(port), HOLDFAST_SWEEP_INTERVAL_MS: '200', HOLDFAST_DRAIN_DELAY_MS: '500', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const url = `http://127.0.0.1:${port}`;
  // Only bounds a server that never gets ready (one that exits is reported at once): a fresh embedded server
  // (PGlite's initdb) took up to ~60 s here at load average 10 with one more core busy, a few seconds quietly.
  const deadline = Date.now() + 300_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`holdfast server exited early:\n${output}`);
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`holdfast server did not become ready:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, port, child, output: () => output, exited };
}
