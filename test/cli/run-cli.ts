/** Run the package's bin (`holdfast …`) against a test server, as on-call would. */
import { spawn, type ChildProcess } from 'node:child_process';
import { BIN } from '../support/server-process.js';
import type { TestServer } from '../support/server.js';

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunningCli {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  done: Promise<CliResult>;
}

export function startCli(
  server: Pick<TestServer, 'url' | 'operatorToken'>,
  args: string[],
  options: { token?: string; env?: Record<string, string> } = {},
): RunningCli {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: {
      ...process.env,
      HOLDFAST_URL: server.url,
      HOLDFAST_TOKEN: options.token ?? server.operatorToken,
      HOLDFAST_DATA_DIR: '/nonexistent',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const done = new Promise<CliResult>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, done };
}

export function holdfast(
  server: Pick<TestServer, 'url' | 'operatorToken'>,
  args: string[],
  options: { token?: string; env?: Record<string, string> } = {},
): Promise<CliResult> {
  return startCli(server, args, options).done;
}
