/**
 * A real Alertmanager (Debian's `prometheus-alertmanager`) on a free loopback
 * port with a temp data dir and clustering off, plus a webhook receiver (a
 * small HTTP server) that records every notification with its arrival time.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { eventually } from '../../support/http.js';
import { freePort } from '../../support/ports.js';

export interface RunningAlertmanager {
  readonly url: string;
  readonly output: string[];
  /** Alerts Alertmanager holds, with their state (`active`, `suppressed`) and inhibitors. */
  alerts(filter?: string): Promise<{ labels: Record<string, string>; status: { state: string; inhibitedBy: string[] } }[]>;
  stop(): Promise<void>;
}

/** Debian installs the server as `prometheus-alertmanager`; upstream builds call it `alertmanager`. */
function alertmanagerBinary(): string {
  for (const name of ['prometheus-alertmanager', 'alertmanager']) {
    if (spawnSync('sh', ['-c', `command -v ${name}`]).status === 0) return name;
  }
  throw new Error('Alertmanager is not installed; install it with scripts/ensure-deps.sh --test');
}

export async function startAlertmanager(config: Record<string, unknown>): Promise<RunningAlertmanager> {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-alertmanager-'));
  const configFile = join(dir, 'alertmanager.yml');
  writeFileSync(configFile, stringify(config));
  const port = await freePort();
  const output: string[] = [];
  const child: ChildProcess = spawn(
    alertmanagerBinary(),
    [
      `--config.file=${configFile}`,
      `--storage.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      // Empty: no gossip listener (it would bind 0.0.0.0:9094 on a shared machine).
      '--cluster.listen-address=',
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.on('error', (error) => output.push(`spawn failed: ${error.message}`));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await eventually(async () => {
      if (child.exitCode !== null) throw new Error(`alertmanager exited (${child.exitCode}): ${output.join('')}`);
      return (await fetch(`${url}/-/ready`).catch(() => undefined))?.ok;
    }, 30_000, 200);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url,
    output,
    async alerts(filter) {
      const query = filter ? `?filter=${encodeURIComponent(filter)}` : '';
      return (await (await fetch(`${url}/api/v2/alerts${query}`)).json()) as Awaited<ReturnType<RunningAlertmanager['alerts']>>;
    },
    stop,
  };
}

/** One alert of a webhook notification (Alertmanager's webhook payload, version 4). */
export interface NotifiedAlert {
  status: 'firing' | 'resolved';
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
}

export interface Notification {
  /** The receiver path the notification was posted to (`/pager`, `/ticket`, …). */
  path: string;
  receivedAt: number;
  status: 'firing' | 'resolved';
  alerts: NotifiedAlert[];
}

export interface WebhookReceiver {
  readonly url: string;
  readonly notifications: Notification[];
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const notifications: Notification[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { status: Notification['status']; alerts: NotifiedAlert[] };
      notifications.push({ path: request.url ?? '', receivedAt: Date.now(), status: body.status, alerts: body.alerts });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    notifications,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
