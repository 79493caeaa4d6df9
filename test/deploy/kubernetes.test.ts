/**
 * deploy/kubernetes/, parsed with `yaml`: the Deployment's probes, port and
 * environment match the server's configuration, the Service and
 * ServiceMonitor reach that port and produce the job the generated rules
 * select, kustomization lists every manifest, and the PrometheusRule carries
 * exactly the rule groups of the generated alerts/*.rules.yml files as they are now.
 *
 * Issue 24 item 3: no Secret is committed. create-secrets.sh (run here with a
 * recording `kubectl` on PATH) generates the tokens file and the audit key with
 * `openssl rand` and creates the Secrets the Deployment reads, with the keys it
 * mounts; the server accepts what it makes; the database URL never reaches a
 * command line; every replica has an audit key.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { AdminTokens } from '../../lock/admin-tokens.js';
import { loadAuditSealer } from '../../lock/audit/audit-key.js';
import { tokenWeakness } from '../../lock/token-strength.js';
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
  volumes: { name: string; secret?: { secretName: string; defaultMode?: number }; emptyDir?: object }[];
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
const plainEnv = Object.fromEntries(container.env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));

/** A probe's port resolved to the container port number. */
const portOf = (port: string | number) => (typeof port === 'number' ? port : container.ports.find((p) => p.name === port)?.containerPort);

describe('deploy/kubernetes', () => {
  it('holds a Deployment, a Service, a ServiceMonitor and a PrometheusRule — and no Secret (they are generated)', () => {
    expect(manifests.map((m) => m.kind).sort()).toEqual(['Deployment', 'PrometheusRule', 'Service', 'ServiceMonitor']);
    for (const name of readdirSync(path.join(root, DIR))) {
      if (name.endsWith('.yaml')) expect(read(`${DIR}/${name}`), name).not.toMatch(/REPLACE-ME|CHANGE-?ME|stringData|kind: Secret/i);
    }
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

  it('create-secrets.sh makes the Secrets the Deployment reads, from `openssl rand`, and the server accepts them', async () => {
    const work = mkdtempSync(path.join(tmpdir(), 'holdfast-k8s-secrets-'));
    try {
      // A recording kubectl: its arguments, and a copy of every --from-file (mode kept).
      const bin = path.join(work, 'bin');
      const captured = path.join(work, 'captured');
      mkdirSync(bin);
      mkdirSync(captured);
      writeFileSync(
        path.join(bin, 'kubectl'),
        [
          '#!/usr/bin/env bash',
          `printf '%s\\n' "$*" >> ${captured}/argv`,
          'prev=; secret=',
          'for arg in "$@"; do',
          '  [ "$prev" = generic ] && secret="$arg"',
          '  case "$arg" in --from-file=*) spec="${arg#--from-file=}"; key="${spec%%=*}"; file="${spec#*=}";',
          `    mkdir -p "${captured}/$secret"; cp -p "$file" "${captured}/$secret/$key";; esac`,
          '  prev="$arg"',
          'done',
          '',
        ].join('\n'),
      );
      chmodSync(path.join(bin, 'kubectl'), 0o755);
      const databaseUrl = 'postgres://holdfast:db-secret-in-env@db.internal:5432/holdfast';
      execFileSync('bash', [path.join(root, DIR, 'create-secrets.sh'), '-n', 'holdfast'], {
        cwd: work,
        env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, DATABASE_URL: databaseUrl },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const argv = readFileSync(path.join(captured, 'argv'), 'utf8');
      expect(argv).toMatch(/^-n holdfast create secret generic holdfast-credentials /m);
      expect(argv).toMatch(/^-n holdfast create secret generic holdfast-database /m);
      expect(argv).not.toContain('db-secret-in-env');

      // DATABASE_URL: the env var's secretKeyRef names a Secret and key the script created.
      const fromSecret = container.env.find((e) => e.name === 'DATABASE_URL')!.valueFrom!.secretKeyRef;
      expect(readFileSync(path.join(captured, fromSecret.name, fromSecret.key), 'utf8')).toBe(databaseUrl);

      // The tokens file and the audit key: mounted from the Secret the script created, under the keys it used.
      for (const variable of ['HOLDFAST_ADMIN_TOKENS_FILE', 'HOLDFAST_AUDIT_KEY_FILE']) {
        const file = plainEnv[variable]!;
        expect(file, variable).toBeDefined();
        const mount = container.volumeMounts.find((m) => file.startsWith(`${m.mountPath}/`))!;
        const volume = pod.volumes.find((v) => v.name === mount.name)!;
        expect(existsSync(path.join(captured, volume.secret!.secretName, path.basename(file))), variable).toBe(true);
      }
      const secretDir = path.join(captured, pod.volumes.find((v) => v.secret && v.name === container.volumeMounts.find((m) => plainEnv.HOLDFAST_ADMIN_TOKENS_FILE!.startsWith(`${m.mountPath}/`))!.name)!.secret!.secretName);
      const tokensFile = path.join(secretDir, path.basename(plainEnv.HOLDFAST_ADMIN_TOKENS_FILE!));
      expect(statSync(tokensFile).mode & 0o777).toBe(0o600);
      expect((await AdminTokens.fromFile(tokensFile)).size).toBe(2);
      for (const entry of JSON.parse(readFileSync(tokensFile, 'utf8')) as { token: string }[]) {
        expect(entry.token).toMatch(/^[0-9a-f]{64}$/); // openssl rand -hex 32
        expect(tokenWeakness(entry.token)).toBeNull();
      }
      await expect(loadAuditSealer(path.join(secretDir, path.basename(plainEnv.HOLDFAST_AUDIT_KEY_FILE!)))).resolves.toBeDefined();
      // The operator's copy for the CLI, private.
      const operatorToken = path.join(work, 'holdfast-credentials', 'operator.token');
      expect(statSync(operatorToken).mode & 0o777).toBe(0o600);
      expect(readFileSync(tokensFile, 'utf8')).toContain(readFileSync(operatorToken, 'utf8').trim());
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('the credentials volume is owner-read-only (0400; with fsGroup the kubelet makes it root-owned 0440, which the server accepts)', () => {
    const mount = container.volumeMounts.find((m) => plainEnv.HOLDFAST_ADMIN_TOKENS_FILE!.startsWith(`${m.mountPath}/`))!;
    const volume = pod.volumes.find((v) => v.name === mount.name)!;
    expect(volume.secret!.defaultMode).toBe(0o400);
    expect((pod.securityContext as { fsGroup?: number }).fsGroup).toBe(pod.securityContext.runAsUser);
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
