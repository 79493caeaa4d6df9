/**
 * deploy/compose.yaml, parsed with `yaml` (no container runs here): PostgreSQL,
 * two Holdfast servers, Prometheus loading the generated rules and Grafana
 * provisioned with the generated dashboards — names, environment, ports,
 * mounts and the Prometheus configuration consistent with each other, the
 * repository and the server's configuration. promtool checks the Prometheus
 * configuration with the mounts resolved to the repository's files.
 *
 * Issue 24 item 3: no default secrets. The one-shot `secrets` step
 * (deploy/compose-secrets.mjs, run here into a temporary directory standing in
 * for its volume) generates the tokens file, the audit key and the PostgreSQL and
 * Grafana passwords, which the server and the services read from that volume;
 * the server accepts what it makes (strength, modes, owners) and a second run
 * changes nothing. PostgreSQL is on an internal network only, Prometheus and
 * Grafana on loopback only, and the recipe text holds no password or placeholder.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AdminTokens } from '../../lock/admin-tokens.js';
import { loadAuditSealer } from '../../lock/audit/audit-key.js';
import { assertPrivateFile } from '../../lock/secret-files.js';
import { databaseUrl } from '../../lock/store/open-store.js';
import { tokenWeakness } from '../../lock/token-strength.js';
import { configFrom, DEFAULTS, read, readYaml, root, ruleFilePaths, rulesSelectJob } from './recipes.js';

interface Service {
  image?: string;
  user?: string;
  network_mode?: string;
  networks?: string[];
  build?: { context: string; dockerfile: string };
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  secrets?: string[];
  command?: string[];
  depends_on?: Record<string, { condition: string }> | string[];
  healthcheck?: { test: string[] };
}
interface Compose {
  services: Record<string, Service>;
  networks: Record<string, { internal?: boolean } | null>;
  volumes: Record<string, unknown>;
}

const COMPOSE = 'deploy/compose.yaml';
const composeDir = path.join(root, 'deploy');
const compose = readYaml<Compose>(COMPOSE);
const services = compose.services;
const holdfasts = Object.keys(services).filter((name) => /^holdfast-\d+$/.test(name));
const fromCompose = (relative: string) => path.resolve(composeDir, relative);

/** A bind mount "host:container[:ro]" → [host path in the repo, container path]; named volumes → undefined. */
function bindMounts(service: Service): [string, string][] {
  return (service.volumes ?? [])
    .map((volume) => volume.split(':'))
    .filter(([source]) => source!.startsWith('.') || source!.startsWith('/'))
    .map(([source, target]) => [fromCompose(source!), target!]);
}

/** The host path a container path of `service` is mounted from. */
function hostPathOf(service: Service, containerPath: string): string | undefined {
  for (const [host, target] of bindMounts(service)) {
    if (containerPath === target) return host;
    if (containerPath.startsWith(`${target}/`)) return path.join(host, containerPath.slice(target.length + 1));
  }
  return undefined;
}

/** "[host:]published:target" → its parts (host undefined = every interface). */
function portSpec(spec: string): { host?: string; published: string; target: string } {
  const parts = spec.split(':');
  const target = parts.pop()!;
  const published = parts.pop()!;
  return { ...(parts.length > 0 ? { host: parts.join(':') } : {}), published, target };
}

/** The secrets step, run once for this file into a stand-in for its volume. */
const SECRETS_MOUNT = '/run/holdfast-secrets';
const volume = mkdtempSync(path.join(tmpdir(), 'holdfast-compose-secrets-'));
afterAll(() => rmSync(volume, { recursive: true, force: true }));
function runSecretsStep(): string {
  const step = services.secrets!;
  const script = hostPathOf(step, step.command![1]!)!;
  return execFileSync(process.execPath, [script, path.join(volume, 'secrets')], { encoding: 'utf8' });
}
/** A container path under the secrets volume → the generated file (the secrets step mounts it at /secrets). */
const generated = (containerPath: string) => {
  expect(containerPath.startsWith(`${SECRETS_MOUNT}/`), containerPath).toBe(true);
  return path.join(volume, 'secrets', containerPath.slice(SECRETS_MOUNT.length + 1));
};
/** A copy owned by this process's user (the original belongs to the image's user when run as root), same mode. */
function asOwnCopy(file: string): string {
  const copy = `${file}.copy`;
  writeFileSync(copy, readFileSync(file), { mode: statSync(file).mode & 0o777 });
  return copy;
}

const prometheusConfigPath = hostPathOf(services.prometheus!, '/etc/prometheus/prometheus.yml')!;
const prometheusConfig = readYaml<{
  rule_files: string[];
  scrape_configs: { job_name: string; metrics_path?: string; static_configs: { targets: string[] }[] }[];
}>(path.relative(root, prometheusConfigPath));

describe('deploy/compose.yaml', () => {
  it('runs PostgreSQL, two Holdfast servers, Prometheus and Grafana, after the one-shot secrets step', () => {
    expect(Object.keys(services).sort()).toEqual(['grafana', 'holdfast-1', 'holdfast-2', 'postgres', 'prometheus', 'secrets']);
    expect(holdfasts).toHaveLength(2);
    for (const name of [...holdfasts, 'postgres', 'grafana']) {
      expect((services[name]!.depends_on as Record<string, { condition: string }>).secrets, name).toEqual({ condition: 'service_completed_successfully' });
    }
    expect(services.secrets!.network_mode).toBe('none');
  });

  it('builds the servers from the repository Dockerfile', () => {
    for (const name of holdfasts) {
      const build = services[name]!.build!;
      expect(existsSync(path.join(fromCompose(build.context), build.dockerfile)), name).toBe(true);
      expect(fromCompose(build.context)).toBe(root);
    }
  });

  it('the servers use the postgres store at the postgres service, as its user, with the generated password, on its database', async () => {
    runSecretsStep();
    const pg = services.postgres!.environment!;
    expect(pg.POSTGRES_PASSWORD).toBeUndefined();
    const postgresPassword = readFileSync(generated(pg.POSTGRES_PASSWORD_FILE!), 'utf8');
    for (const name of holdfasts) {
      const env = services[name]!.environment!;
      const { config, unknown } = configFrom(env);
      expect(unknown, name).toEqual([]);
      expect(config.HOLDFAST_STORE).toBe('postgres');
      const url = new URL(config.DATABASE_URL!);
      expect(url.hostname).toBe('postgres');
      expect(url.port).toBe('5432');
      expect(decodeURIComponent(url.username)).toBe(pg.POSTGRES_USER);
      expect(url.password).toBe('');
      expect(url.pathname).toBe(`/${pg.POSTGRES_DB}`);
      // What the server connects with: the URL plus the password file's, the one PostgreSQL was initialised with.
      const passwordFile = asOwnCopy(generated(config.HOLDFAST_DATABASE_PASSWORD_FILE!));
      const connected = new URL(await databaseUrl({ DATABASE_URL: config.DATABASE_URL, HOLDFAST_DATABASE_PASSWORD_FILE: passwordFile }));
      expect(decodeURIComponent(connected.password)).toBe(postgresPassword);
      expect(config.HOLDFAST_HOST).toBe('0.0.0.0');
      expect((services[name]!.depends_on as Record<string, unknown>).postgres).toEqual({ condition: 'service_healthy' });
    }
    expect(services.postgres!.healthcheck!.test).toContain('pg_isready');
  });

  it('publishes each server’s configured port on distinct host ports', () => {
    const hostPorts = holdfasts.map((name) => {
      const { config } = configFrom(services[name]!.environment!);
      expect(config.HOLDFAST_PORT).toBe(DEFAULTS.HOLDFAST_PORT);
      const { published, target } = portSpec(services[name]!.ports![0]!);
      expect(Number(target)).toBe(config.HOLDFAST_PORT);
      return published;
    });
    expect(new Set(hostPorts).size).toBe(holdfasts.length);
  });

  it('the tokens file and the audit key are generated by the secrets step, and the server accepts them (strength, mode, owner)', async () => {
    expect(runSecretsStep()).toMatch(/holdfast secrets: /);
    const secretsMount = services.secrets!.volumes!.find((v) => v.endsWith(':/secrets'))!.split(':')[0]!;
    for (const name of holdfasts) {
      const env = services[name]!.environment!;
      expect(services[name]!.volumes).toContain(`${secretsMount}:${SECRETS_MOUNT}:ro`);
      for (const variable of ['HOLDFAST_ADMIN_TOKENS_FILE', 'HOLDFAST_AUDIT_KEY_FILE', 'HOLDFAST_DATABASE_PASSWORD_FILE']) {
        const file = generated(env[variable]!);
        expect(existsSync(file), `${name} ${variable}`).toBe(true);
        // 0600, owned by the image's `node` user (uid 1000, the Dockerfile's USER) when made as root.
        await assertPrivateFile(file, variable, { uid: process.getuid?.() === 0 ? 1000 : process.getuid!() });
        expect(statSync(file).mode & 0o777).toBe(0o600);
      }
      const tokens = await AdminTokens.fromFile(asOwnCopy(generated(env.HOLDFAST_ADMIN_TOKENS_FILE!)));
      expect(tokens.size).toBe(2);
      await expect(loadAuditSealer(asOwnCopy(generated(env.HOLDFAST_AUDIT_KEY_FILE!)))).resolves.toBeDefined();
    }
    // The CLI's copy of the operator token is the tokens file's operator entry.
    const operator = readFileSync(path.join(volume, 'secrets/holdfast/operator.token'), 'utf8').trim();
    const listed = JSON.parse(readFileSync(generated(services['holdfast-1']!.environment!.HOLDFAST_ADMIN_TOKENS_FILE!), 'utf8')) as { token: string; role: string }[];
    expect(listed.find((e) => e.role === 'operator')!.token).toBe(operator);
    for (const entry of listed) expect(tokenWeakness(entry.token)).toBeNull();
    // Later `up`s keep what the first one made.
    const before = readFileSync(generated(services['holdfast-1']!.environment!.HOLDFAST_ADMIN_TOKENS_FILE!), 'utf8');
    expect(runSecretsStep()).toMatch(/none changed/);
    expect(readFileSync(generated(services['holdfast-1']!.environment!.HOLDFAST_ADMIN_TOKENS_FILE!), 'utf8')).toBe(before);
  });

  it('holds no password, token or placeholder itself: no admin/admin Grafana, no holdfast/holdfast PostgreSQL', () => {
    runSecretsStep();
    const text = read(COMPOSE);
    expect(text).not.toMatch(/REPLACE-ME|CHANGE-?ME/i);
    expect(text).not.toMatch(/POSTGRES_PASSWORD:|GF_SECURITY_ADMIN_PASSWORD:|PGPASSWORD/);
    expect(text).not.toMatch(/postgres:\/\/[^@\s]*:[^@\s]*@/);
    const grafana = services.grafana!.environment!;
    expect(grafana.GF_SECURITY_ADMIN_PASSWORD__FILE).toBeDefined();
    expect(readFileSync(generated(grafana.GF_SECURITY_ADMIN_PASSWORD__FILE!), 'utf8')).toMatch(/^[0-9a-f]{64}$/);
    expect(grafana.GF_AUTH_ANONYMOUS_ENABLED).toBe('false');
  });

  it('PostgreSQL is on an internal network only; Prometheus and Grafana are published on loopback only', () => {
    const postgres = services.postgres!;
    expect(postgres.ports).toBeUndefined();
    expect(postgres.networks!.length).toBeGreaterThan(0);
    for (const network of postgres.networks!) expect(compose.networks[network]?.internal, network).toBe(true);
    for (const name of holdfasts) expect(services[name]!.networks).toEqual(expect.arrayContaining(postgres.networks!));
    for (const name of ['prometheus', 'grafana']) {
      const ports = services[name]!.ports!;
      expect(ports.length, name).toBeGreaterThan(0);
      for (const port of ports) expect(portSpec(port).host, `${name} ${port}`).toBe('127.0.0.1');
    }
  });

  it('every server sets an audit key', () => {
    for (const name of holdfasts) expect(configFrom(services[name]!.environment!).config.HOLDFAST_AUDIT_KEY_FILE, name).toBeDefined();
  });

  it('Prometheus scrapes every server, as the job the generated rules select', () => {
    expect(prometheusConfig.scrape_configs).toHaveLength(1);
    const [job] = prometheusConfig.scrape_configs;
    expect(rulesSelectJob(job!.job_name)).toBe(true);
    expect(job!.metrics_path ?? '/metrics').toBe('/metrics');
    const targets = job!.static_configs.flatMap((c) => c.targets).sort();
    expect(targets).toEqual(holdfasts.map((name) => `${name}:${configFrom(services[name]!.environment!).config.HOLDFAST_PORT}`).sort());
  });

  it('Prometheus loads exactly the generated rule files (mounted from alerts/, not copied)', () => {
    const matched = prometheusConfig.rule_files.flatMap((pattern) => {
      const host = hostPathOf(services.prometheus!, path.dirname(pattern))!;
      expect(host, pattern).toBeDefined();
      const glob = new RegExp(`^${path.basename(pattern).replace(/\./g, '\\.').replace(/\*/g, '[^/]*')}$`);
      return readdirSync(host)
        .filter((name) => glob.test(name))
        .map((name) => path.relative(root, path.join(host, name)));
    });
    expect(matched.sort()).toEqual(ruleFilePaths());
  });

  it('promtool accepts the Prometheus configuration and the rules it loads', () => {
    const work = mkdtempSync(path.join(tmpdir(), 'holdfast-compose-prom-'));
    try {
      // Resolve the container paths to the mounted repository files, as the container would see them.
      cpSync(path.join(root, 'alerts'), path.join(work, 'rules'), { recursive: true });
      const config = read(path.relative(root, prometheusConfigPath)).replaceAll('/etc/prometheus/rules/', `${work}/rules/`);
      writeFileSync(path.join(work, 'prometheus.yml'), config);
      const output = execFileSync('promtool', ['check', 'config', path.join(work, 'prometheus.yml')], { encoding: 'utf8' });
      expect(output).toMatch(/SUCCESS/);
      expect(output).not.toMatch(/FAILED/);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('Grafana is provisioned with the Prometheus service as data source and the generated dashboards', () => {
    const grafana = services.grafana!;
    const datasourceFile = hostPathOf(grafana, '/etc/grafana/provisioning/datasources/prometheus.yaml')!;
    const datasources = readYaml<{ datasources: { type: string; url: string; isDefault: boolean }[] }>(path.relative(root, datasourceFile)).datasources;
    expect(datasources).toHaveLength(1);
    expect(datasources[0]!.type).toBe('prometheus');
    const { published, target: prometheusPort } = portSpec(services.prometheus!.ports![0]!);
    expect(published).toBeDefined();
    expect(datasources[0]!.url).toBe(`http://prometheus:${prometheusPort}`);

    const providerFile = hostPathOf(grafana, '/etc/grafana/provisioning/dashboards/holdfast.yaml')!;
    const providers = readYaml<{ providers: { type: string; options: { path: string } }[] }>(path.relative(root, providerFile)).providers;
    expect(providers).toHaveLength(1);
    const dashboardsDir = hostPathOf(grafana, providers[0]!.options.path)!;
    expect(path.relative(root, dashboardsDir)).toBe('dashboards');
    const dashboards = readdirSync(dashboardsDir).filter((name) => name.endsWith('.json'));
    expect(dashboards.sort()).toEqual(['holdfast-overview.json', 'holdfast-slo.json']);
  });

  it('every file or folder it mounts exists in the repository', () => {
    const mounts = Object.values(services).flatMap(bindMounts);
    expect(mounts.length).toBeGreaterThan(3);
    for (const [host] of mounts) expect(existsSync(host), host).toBe(true);
  });

  it('every named volume it uses is declared', () => {
    const named = Object.values(services)
      .flatMap((s) => s.volumes ?? [])
      .map((v) => v.split(':')[0]!)
      .filter((source) => !source.startsWith('.') && !source.startsWith('/'));
    expect(named.filter((name) => !(name in compose.volumes))).toEqual([]);
  });
});
