/**
 * deploy/kubernetes/, parsed with `yaml`: the Deployment's probes, port and
 * environment match the server's configuration, the Service and
 * ServiceMonitor reach that port and produce the job the generated rules
 * select, the Secrets hold what the Deployment reads, kustomization lists
 * every manifest, and the PrometheusRule carries exactly the rule groups of
 * the generated alerts/*.rules.yml files as they are now.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { AdminTokens } from '../../lock/admin-tokens.js';
import { cliCommands, configFrom, DEFAULTS, read, readYaml, readYamlDocuments, root, ruleFilePaths, rulesSelectJob } from './recipes.js';

const DIR = 'deploy/kubernetes';
type Manifest = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; [key: string]: unknown };

interface Container {
  args: string[];
  env: { name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet: { path: string; port: string | number } };
  readinessProbe: { httpGet: { path: string; port: string | number } };
  startupProbe?: { httpGet: { path: string; port: string | number } };
  volumeMounts: { name: string; mountPath: string }[];
}
interface PodSpec {
  securityContext: { runAsNonRoot: boolean; runAsUser: number };
  containers: Container[];
  volumes: { name: string; secret?: { secretName: string }; emptyDir?: object }[];
}

const manifests: Manifest[] = readdirSync(path.join(root, DIR))
  .filter((name) => name.endsWith('.yaml') && name !== 'kustomization.yaml')
  .flatMap((name) => readYamlDocuments<Manifest>(`${DIR}/${name}`));
const byKind = (kind: string) => manifests.filter((m) => m.kind === kind);
const deployment = byKind('Deployment')[0]! as Manifest & {
  spec: { replicas: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
};
const pod = deployment.spec.template.spec;
const container = pod.containers[0]!;
const service = byKind('Service')[0]! as Manifest & {
  spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string | number }[] };
};
const secrets = byKind('Secret') as (Manifest & { stringData: Record<string, string> })[];
const plainEnv = Object.fromEntries(container.env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));

/** A probe's port resolved to the container port number. */
const portOf = (port: string | number) => (typeof port === 'number' ? port : container.ports.find((p) => p.name === port)?.containerPort);

describe('deploy/kubernetes', () => {
  it('holds a Deployment, a Service, a ServiceMonitor, a PrometheusRule and the Secrets', () => {
    expect(manifests.map((m) => m.kind).sort()).toEqual(['Deployment', 'PrometheusRule', 'Secret', 'Secret', 'Service', 'ServiceMonitor']);
  });

  it('kustomization.yaml lists every manifest file, and only existing ones', () => {
    const listed = readYaml<{ resources: string[] }>(`${DIR}/kustomization.yaml`).resources.sort();
    const files = readdirSync(path.join(root, DIR)).filter((n) => n.endsWith('.yaml') && n !== 'kustomization.yaml').sort();
    expect(listed).toEqual(files);
  });

  it('runs `holdfast server` as a non-root user, two replicas', () => {
    expect(cliCommands()).toContain(container.args[0]);
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
    expect(deployment.spec.template.metadata.labels).toMatchObject(deployment.spec.selector.matchLabels);
  });

  it('its environment is configuration the server knows: postgres, all interfaces, the default port', () => {
    const { config, unknown } = configFrom({ ...plainEnv, DATABASE_URL: 'postgres://placeholder/db' });
    expect(unknown).toEqual([]);
    expect(config.HOLDFAST_STORE).toBe('postgres');
    expect(config.HOLDFAST_HOST).toBe('0.0.0.0');
    expect(config.HOLDFAST_PORT).toBe(DEFAULTS.HOLDFAST_PORT);
    expect(container.ports).toEqual([{ name: 'http', containerPort: config.HOLDFAST_PORT }]);
  });

  it('liveness probes /healthz and readiness probes /readyz, on the server port', () => {
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    for (const probe of [container.livenessProbe, container.readinessProbe, container.startupProbe!]) {
      expect(portOf(probe.httpGet.port)).toBe(DEFAULTS.HOLDFAST_PORT);
    }
  });

  it('DATABASE_URL and the admin tokens file come from the Secrets, and the tokens there are valid', async () => {
    const fromSecret = container.env.find((e) => e.name === 'DATABASE_URL')!.valueFrom!.secretKeyRef;
    const database = secrets.find((s) => s.metadata.name === fromSecret.name)!;
    expect(new URL(database.stringData[fromSecret.key]!).protocol).toBe('postgres:');

    const tokensFile = plainEnv.HOLDFAST_ADMIN_TOKENS_FILE!;
    const mount = container.volumeMounts.find((m) => tokensFile.startsWith(`${m.mountPath}/`))!;
    const volume = pod.volumes.find((v) => v.name === mount.name)!;
    const tokensSecret = secrets.find((s) => s.metadata.name === volume.secret!.secretName)!;
    const content = tokensSecret.stringData[path.basename(tokensFile)]!;
    const work = mkdtempSync(path.join(tmpdir(), 'holdfast-k8s-tokens-'));
    try {
      writeFileSync(path.join(work, 'tokens.json'), content);
      expect((await AdminTokens.fromFile(path.join(work, 'tokens.json'))).size).toBeGreaterThan(0);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('the data directory is a writable volume (the root filesystem is read-only)', () => {
    const dataDir = plainEnv.HOLDFAST_DATA_DIR ?? '/var/lib/holdfast'; // the image's HOLDFAST_DATA_DIR (Dockerfile)
    expect(read('Dockerfile')).toContain(`HOLDFAST_DATA_DIR=${dataDir}`);
    const mount = container.volumeMounts.find((m) => m.mountPath === dataDir)!;
    expect(pod.volumes.find((v) => v.name === mount.name)!.emptyDir).toBeDefined();
  });

  it('the Service selects the pods and targets the container port', () => {
    expect(deployment.spec.template.metadata.labels).toMatchObject(service.spec.selector);
    const [port] = service.spec.ports;
    expect(portOf(port!.targetPort)).toBe(DEFAULTS.HOLDFAST_PORT);
  });

  it('the ServiceMonitor scrapes /metrics on that Service port, as the job the generated rules select', () => {
    const monitor = byKind('ServiceMonitor')[0]! as Manifest & {
      spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[]; jobLabel?: string };
    };
    expect(service.metadata.labels).toMatchObject(monitor.spec.selector.matchLabels);
    expect(monitor.spec.endpoints.map((e) => [e.port, e.path])).toEqual([[service.spec.ports[0]!.name, '/metrics']]);
    // prometheus-operator names the job after the Service unless jobLabel says otherwise.
    expect(monitor.spec.jobLabel).toBeUndefined();
    expect(rulesSelectJob(service.metadata.name)).toBe(true);
  });

  it('the PrometheusRule carries exactly the groups of the generated rule files', () => {
    const rule = byKind('PrometheusRule')[0]! as Manifest & { spec: { groups: unknown[] } };
    const groups = ruleFilePaths().flatMap((file) => (parse(read(file)) as { groups: unknown[] }).groups);
    expect(groups.length).toBeGreaterThan(2);
    expect(rule.spec.groups).toEqual(groups);
  });
});
