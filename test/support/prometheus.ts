/**
 * A real Prometheus server (Debian's `prometheus`) on a free loopback port,
 * with a temp data dir, for end-to-end checks of /metrics and of the
 * generated rules. The caller gives the config (or just a scrape target).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { eventually } from './http.js';
import { freePort } from './ports.js';

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface RunningPrometheus {
  url: string;
  /** The temp dir Prometheus runs in (rule files can be written here). */
  dir: string;
  output: string[];
  /** Instant query; throws unless Prometheus answers success. */
  query(expr: string): Promise<PromSample[]>;
  /** Polls until the query returns samples that `accept` takes (default: any). */
  until(expr: string, accept?: (samples: PromSample[]) => boolean): Promise<PromSample[]>;
  exemplars(expr: string): Promise<{ seriesLabels: Record<string, string>; exemplars: { labels: Record<string, string>; value: string }[] }[]>;
  stop(): Promise<void>;
}

export interface PrometheusOptions {
  /** The whole config; `configFor(dir)` may write rule files into Prometheus's temp dir first. */
  configFor?: (dir: string) => Record<string, unknown>;
  /** Shorthand: scrape this host:port as job `holdfast` every second. */
  target?: string;
  exemplars?: boolean;
  /** More command-line flags (e.g. a short `--rules.alert.resend-delay` for alerting tests). */
  args?: readonly string[];
}

export async function startPrometheus(options: PrometheusOptions): Promise<RunningPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-prometheus-'));
  const config =
    options.configFor?.(dir) ??
    ({
      global: { scrape_interval: '1s' },
      scrape_configs: [{ job_name: 'holdfast', static_configs: [{ targets: [options.target] }] }],
    } as Record<string, unknown>);
  const configFile = join(dir, 'prometheus.yml');
  writeFileSync(configFile, stringify(config));
  const port = await freePort();
  const output: string[] = [];
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--storage.tsdb.retention.time=1h',
      '--log.level=warn',
      ...(options.exemplars ? ['--enable-feature=exemplar-storage'] : []),
      ...(options.args ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  const api = async <T>(path: string): Promise<T> => {
    const body = (await (await fetch(`${url}${path}`)).json()) as { status: string; error?: string; data: T };
    if (body.status !== 'success') throw new Error(`${path}: ${body.error}`);
    return body.data;
  };
  try {
    await eventually(async () => {
      if (child.exitCode !== null) throw new Error(`prometheus exited (${child.exitCode}): ${output.join('')}`);
      return (await fetch(`${url}/-/ready`).catch(() => undefined))?.ok;
    }, 30_000, 200);
  } catch (error) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const query = async (expr: string) => (await api<{ result: PromSample[] }>(`/api/v1/query?query=${encodeURIComponent(expr)}`)).result;
  return {
    url,
    dir,
    output,
    query,
    until: (expr, accept = (samples) => samples.length > 0) =>
      eventually(async () => {
        const samples = await query(expr);
        return accept(samples) ? samples : undefined;
      }, 60_000, 500),
    exemplars: async (expr) => {
      const now = Date.now() / 1000;
      return api(`/api/v1/query_exemplars?query=${encodeURIComponent(expr)}&start=${now - 600}&end=${now + 60}`);
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
