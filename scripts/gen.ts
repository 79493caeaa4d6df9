/**
 * `npm run gen`: regenerates the committed monitoring artefacts (Prometheus
 * rule files, Grafana dashboards, the Kubernetes PrometheusRule) from
 * contract/metric-table.ts. The freshness
 * test calls the same `generatedFiles()` and compares with what is committed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ruleFiles } from '../alerts/generate.js';
import { dashboardFiles } from '../dashboards/generate.js';
import { kubernetesFiles } from '../deploy/kubernetes/generate.js';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Repository-relative path → exact file content. */
export function generatedFiles(): Record<string, string> {
  const monitoring = { ...ruleFiles(), ...dashboardFiles() };
  return { ...monitoring, ...kubernetesFiles(monitoring) };
}

function main(): void {
  for (const [path, content] of Object.entries(generatedFiles())) {
    const target = join(REPO_ROOT, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    console.log(`wrote ${path}`);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
