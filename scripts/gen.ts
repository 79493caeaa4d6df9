/**
 * `npm run gen`: regenerates the committed monitoring artefacts (Prometheus
 * rule files, the Alertmanager configuration, Grafana dashboards, the Kubernetes
 * PrometheusRule) from
 * contract/metric-table.ts and the monitoring config: alerts/config.ts's
 * defaults, overridden by monitoring.config.yaml at the repository root when
 * it exists. The freshness test calls the same `generatedFiles()`. Also the
 * OpenAPI document (docs/openapi.json) from the HTTP route schemas
 * (`generatedApiFiles()`, checked by test/http/openapi-document.test.ts).
 *
 * The per-policy `HoldfastLockHeldTooLong` rules come from a policies file (the server's
 * HOLDFAST_POLICIES_FILE format, read by the server's own loader): `deploy/policies.yaml` by default,
 * `npm run gen -- --policies FILE` for an operator's own.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OVERRIDE_FILE, loadConfig, type MonitoringConfig } from '../alerts/config.js';
import { alertmanagerFiles, ruleFiles } from '../alerts/generate.js';
import { dashboardFiles } from '../dashboards/generate.js';
import { kubernetesFiles } from '../deploy/kubernetes/generate.js';
import type { LockPolicy } from '../contract/policies.js';
import { OPENAPI_PATH, openApiDocumentText } from '../lock/http/openapi-document.js';
import { loadPoliciesFile } from '../lock/policies-file.js';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The config this checkout generates with. */
export function repoConfig(): MonitoringConfig {
  return loadConfig(join(REPO_ROOT, OVERRIDE_FILE));
}

/** The example policies file the committed rules are generated from. */
export const DEFAULT_POLICIES_FILE = 'deploy/policies.yaml';

/** The policies this checkout generates with (the freshness test's too). */
export function repoPolicies(file = join(REPO_ROOT, DEFAULT_POLICIES_FILE)): readonly LockPolicy[] {
  return loadPoliciesFile(file);
}

/** Repository-relative path → exact file content. */
export function generatedFiles(config: MonitoringConfig = repoConfig(), policies: readonly LockPolicy[] = repoPolicies()): Record<string, string> {
  const monitoring = { ...ruleFiles(config, policies), ...alertmanagerFiles(config), ...dashboardFiles(config) };
  return { ...monitoring, ...kubernetesFiles(monitoring) };
}

/** The HTTP surface's OpenAPI document, built from the route schemas. */
export async function generatedApiFiles(): Promise<Record<string, string>> {
  return { [OPENAPI_PATH]: await openApiDocumentText() };
}

/** `--policies FILE` (or `--policies=FILE`), else the example file. */
function policiesArgument(args: readonly string[]): string {
  const index = args.findIndex((arg) => arg === '--policies' || arg.startsWith('--policies='));
  if (index === -1) return join(REPO_ROOT, DEFAULT_POLICIES_FILE);
  const value = args[index]!.includes('=') ? args[index]!.slice('--policies='.length) : args[index + 1];
  if (!value) throw new Error('--policies needs a file: npm run gen -- --policies FILE');
  return resolve(value);
}

async function main(): Promise<void> {
  const policiesFile = policiesArgument(process.argv.slice(2));
  const files = { ...generatedFiles(repoConfig(), repoPolicies(policiesFile)), ...(await generatedApiFiles()) };
  console.log(`policies: ${policiesFile}`);
  for (const [path, content] of Object.entries(files)) {
    const target = join(REPO_ROOT, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    console.log(`wrote ${path}`);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
