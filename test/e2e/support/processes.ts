/**
 * A private lock server and console for tests that stop the server: real
 * processes on free loopback ports, stopped by pid.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  server.close();
  await once(server, 'close');
  return port;
}

export interface Proc {
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

function start(command: string, args: string[], env: Record<string, string>): Proc {
  const child = spawn(command, args, { env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  // Keep only the tail: enough to explain a failed start.
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-8_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return {
    child,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Only bounds a process that never gets ready (one that exits is reported at once): a fresh embedded
 * server's first start (PGlite's initdb) took 38–60 s here at load average 15, a few seconds quietly.
 */
export async function waitForUrl(url: string, proc: Proc, timeoutMillis = 150_000): Promise<void> {
  const deadline = Date.now() + timeoutMillis;
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`process exited before ${url} answered:\n${proc.output()}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (response.ok) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMillis} ms:\n${proc.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

export function startLockServer(opts: { port: number; dataDir: string; tokensFile: string; env?: Record<string, string> }): Proc {
  return start(process.execPath, ['bin/holdfast.js', 'server'], {
    HOLDFAST_STORE: 'embedded',
    HOLDFAST_PORT: String(opts.port),
    HOLDFAST_DATA_DIR: opts.dataDir,
    HOLDFAST_ADMIN_TOKENS_FILE: opts.tokensFile,
    ...opts.env,
  });
}

export function startConsole(opts: { port: number; holdfastUrl: string; env?: Record<string, string> }): Proc {
  return start(process.execPath, ['node_modules/next/dist/bin/next', 'start', '-p', String(opts.port), '-H', '127.0.0.1'], {
    HOLDFAST_URL: opts.holdfastUrl,
    ...opts.env,
  });
}
