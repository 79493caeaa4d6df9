/**
 * The real `holdfast server` (the package's bin) as a child process, so its CPU is its own
 * (read from /proc) and the load generator's process holds only the SDK's. Unlike the tests'
 * spawnServer (test/support/server-process.ts), its log goes to a file, not into a string in
 * this process: at the default `info` level the server writes a JSON line per grant and per
 * release, which would otherwise grow this process's heap and CPU with every cycle.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../../test/support/ports.js';
import { BIN } from '../../../test/support/server-process.js';

export interface HoldfastProcess {
  url: string;
  pid: number;
  /** The server's own temporary directory: its log and (embedded store) its data. */
  dir: string;
  stop(): Promise<void>;
}

/** Only bounds a server that never gets ready: a fresh embedded store runs initdb in WASM (up to a minute on a loaded machine). */
const READY_TIMEOUT_MILLIS = 300_000;
const STOP_GRACE_MILLIS = 10_000;

function logTail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-20).join('\n');
  } catch {
    return '(no log)';
  }
}

/** `env`: the store settings; everything else is the server's default (HOLDFAST_HOST defaults to 127.0.0.1). */
export async function spawnHoldfast(name: string, env: (dir: string) => Record<string, string>): Promise<HoldfastProcess> {
  const dir = mkdtempSync(path.join(tmpdir(), `holdfast-peers-${name}-`));
  const logFile = path.join(dir, 'server.log');
  const port = await freePort();
  const log = openSync(logFile, 'a');
  const child = spawn(process.execPath, [BIN, 'server'], {
    env: {
      ...process.env,
      ...env(dir),
      HOLDFAST_PORT: String(port),
      // Only how long a stop takes (the drain before closing the listener); no cell sees it.
      HOLDFAST_DRAIN_DELAY_MS: '0',
    },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MILLIS);
    await exited;
    clearTimeout(timer);
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MILLIS;
  for (;;) {
    if (child.exitCode !== null) {
      const tail = logTail(logFile);
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`holdfast server (${name}) exited during start:\n${tail}`);
    }
    try {
      const response = await fetch(`${url}/readyz`);
      await response.arrayBuffer(); // read to the end, so the connection is free again
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      const tail = logTail(logFile);
      await kill();
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`holdfast server (${name}) not ready after ${READY_TIMEOUT_MILLIS} ms:\n${tail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url,
    pid: child.pid!,
    dir,
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
