/**
 * A private lock server, console and (optionally) Prometheus for specs whose
 * assertions need a server nobody else touches: the overview's figures must
 * equal exactly what the spec did. Real processes on free loopback ports.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml, stringify } from 'yaml';
import { HOLDFAST_JOB } from '../../../alerts/config.js';
import { read, ruleFilePaths } from '../../monitoring/sources.js';
import { startPrometheus, type RunningPrometheus } from '../../support/prometheus.js';
import { e2e } from './env.js';
import { freePort, startConsole, startLockServer, waitForUrl, type Proc } from './processes.js';

export interface PrivateStack {
  serverUrl: string;
  consoleUrl: string;
  serverPort: number;
  prometheus?: RunningPrometheus;
  stop(): Promise<void>;
}

/**
 * The generated rule files as committed, with each group's own `interval` dropped
 * so every group evaluates at Prometheus's 1 s (the 30-day group runs every 5 m in production).
 */
function writeRuleFiles(dir: string): string[] {
  return ruleFilePaths().map((file, i) => {
    const parsed = parseYaml(read(file)) as { groups: { interval?: string }[] };
    for (const group of parsed.groups) delete group.interval;
    const target = path.join(dir, `rules-${i}.yml`);
    writeFileSync(target, stringify(parsed));
    return target;
  });
}

export async function startPrivateStack(options: { serverEnv?: Record<string, string>; prometheus?: boolean } = {}): Promise<PrivateStack> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'holdfast-e2e-private-'));
  const serverPort = await freePort();
  const consolePort = await freePort();
  const serverUrl = `http://127.0.0.1:${serverPort}`;
  const consoleUrl = `http://127.0.0.1:${consolePort}`;
  const procs: Proc[] = [];
  let prometheus: RunningPrometheus | undefined;
  const stop = async () => {
    for (const proc of procs.reverse()) await proc.stop();
    await prometheus?.stop();
  };
  try {
    const server = startLockServer({ port: serverPort, dataDir, tokensFile: e2e.tokensFile, env: options.serverEnv ?? {} });
    procs.push(server);
    await waitForUrl(`${serverUrl}/readyz`, server);
    if (options.prometheus) {
      prometheus = await startPrometheus({
        configFor: (dir) => ({
          global: { scrape_interval: '1s', evaluation_interval: '1s', scrape_timeout: '1s' },
          rule_files: writeRuleFiles(dir),
          scrape_configs: [{ job_name: HOLDFAST_JOB, static_configs: [{ targets: [`127.0.0.1:${serverPort}`] }] }],
        }),
      });
    }
    const consoleProc = startConsole({ port: consolePort, holdfastUrl: serverUrl, env: prometheus ? { PROMETHEUS_URL: prometheus.url } : {} });
    procs.push(consoleProc);
    await waitForUrl(`${consoleUrl}/signin`, consoleProc);
  } catch (error) {
    await stop();
    throw error;
  }
  return { serverUrl, consoleUrl, serverPort, ...(prometheus ? { prometheus } : {}), stop };
}
