/**
 * `npm run gen`: regenerates the committed monitoring artefacts (Prometheus
 * rule files, the Alertmanager configuration, Grafana dashboards, the Kubernetes
 * PrometheusRule) from
 * contract/metric-table.ts and the monitoring config: alerts/config.ts's
 * defaults, overridden by monitoring.config.yaml at the repository root when
 * it exists. The freshness test calls the same `generatedFiles()`. Also the
 * OpenAPI document (docs/openapi.json) from the HTTP route schemas
 * (`generatedApiFiles()`, checked by test/http/openapi-document.test.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OVERRIDE_FILE, loadConfig, type MonitoringConfig } from '../alerts/config.js';
import { alertmanagerFiles, ruleFiles } from '../alerts/generate.js';
import { dashboardFiles } from '../dashboards/generate.js';
import { kubernetesFiles } from '../deploy/kubernetes/generate.js';
import { OPENAPI_PATH, openApiDocumentText } from '../lock/http/openapi-document.js';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The config this checkout generates with. */
export function repoConfig(): MonitoringConfig {
  return loadConfig(join(REPO_ROOT, OVERRIDE_FILE));
}

/** Repository-relative path → exact file content. */
export function generatedFiles(config: MonitoringConfig = repoConfig()): Record<string, string> {
  const monitoring = { ...ruleFiles(config), ...alertmanagerFiles(config), ...dashboardFiles(config) };
  return { ...monitoring, ...kubernetesFiles(monitoring) };
}

/** The HTTP surface's OpenAPI document, built from the route schemas. */
export async function generatedApiFiles(): Promise<Record<string, string>> {
  return { [OPENAPI_PATH]: await openApiDocumentText() };
}

async function main(): Promise<void> {
  for (const [path, content] of Object.entries({ ...generatedFiles(), ...(await generatedApiFiles()) })) {
    const target = join(REPO_ROOT, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    console.log(`wrote ${path}`);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
