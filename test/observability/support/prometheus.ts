/**
 * A real Prometheus server (Debian's `prometheus`) scraping one target every
 * second, optionally with exemplar storage, for end-to-end checks of /metrics.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../../support/http.js';
import { freePort } from '../../support/ports.js';

export interface RunningPrometheus {
  url: string;
  /** Instant query; throws unless Prometheus answers success. */
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  exemplars(expr: string): Promise<{ seriesLabels: Record<string, string>; exemplars: { labels: Record<string, string>; value: string }[] }[]>;
  stop(): Promise<void>;
}

export async function startPrometheus(target: string, options: { exemplars?: boolean } = {}): Promise<RunningPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-prometheus-'));
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    ['global:', '  scrape_interval: 1s', 'scrape_configs:', '  - job_name: holdfast', '    static_configs:', `      - targets: ['${target}']`, ''].join('\n'),
  );
  const port = await freePort();
  const output: string[] = [];
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
      ...(options.exemplars ? ['--enable-feature=exemplar-storage'] : []),
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
      if (child.exitCode !== null) throw new Error(`prometheus exited: ${output.join('')}`);
      return (await fetch(`${url}/-/ready`).catch(() => undefined))?.ok;
    }, 30_000, 200);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return {
    url,
    query: async (expr) => (await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(`/api/v1/query?query=${encodeURIComponent(expr)}`)).result,
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
