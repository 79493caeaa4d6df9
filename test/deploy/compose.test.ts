/**
 * deploy/compose.yaml, parsed with `yaml` (no container runs here): PostgreSQL,
 * two Holdfast servers, Prometheus loading the generated rules and Grafana
 * provisioned with the generated dashboards — names, environment, ports,
 * mounts and the Prometheus configuration consistent with each other, the
 * repository and the server's configuration. promtool checks the Prometheus
 * configuration with the mounts resolved to the repository's files.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AdminTokens } from '../../lock/admin-tokens.js';
import { configFrom, DEFAULTS, read, readYaml, root, ruleFilePaths, rulesSelectJob } from './recipes.js';

interface Service {
  image?: string;
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
  secrets: Record<string, { file: string }>;
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

const prometheusConfigPath = hostPathOf(services.prometheus!, '/etc/prometheus/prometheus.yml')!;
const prometheusConfig = readYaml<{
  rule_files: string[];
  scrape_configs: { job_name: string; metrics_path?: string; static_configs: { targets: string[] }[] }[];
}>(path.relative(root, prometheusConfigPath));

describe('deploy/compose.yaml', () => {
  it('runs PostgreSQL, two Holdfast servers, Prometheus and Grafana', () => {
    expect(Object.keys(services).sort()).toEqual(['grafana', 'holdfast-1', 'holdfast-2', 'postgres', 'prometheus']);
    expect(holdfasts).toHaveLength(2);
  });

  it('builds the servers from the repository Dockerfile', () => {
    for (const name of holdfasts) {
      const build = services[name]!.build!;
      expect(existsSync(path.join(fromCompose(build.context), build.dockerfile)), name).toBe(true);
      expect(fromCompose(build.context)).toBe(root);
    }
  });

  it('the servers use the postgres store at the postgres service, with its credentials and database', () => {
    const pg = services.postgres!.environment!;
    for (const name of holdfasts) {
      const env = services[name]!.environment!;
      const { config, unknown } = configFrom(env);
      expect(unknown, name).toEqual([]);
      expect(config.HOLDFAST_STORE).toBe('postgres');
      const url = new URL(config.DATABASE_URL!);
      expect(url.hostname).toBe('postgres');
      expect(url.port).toBe('5432');
      expect(decodeURIComponent(url.username)).toBe(pg.POSTGRES_USER);
      expect(decodeURIComponent(url.password)).toBe(pg.POSTGRES_PASSWORD);
      expect(url.pathname).toBe(`/${pg.POSTGRES_DB}`);
      expect(config.HOLDFAST_HOST).toBe('0.0.0.0');
      expect(services[name]!.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    }
    expect(services.postgres!.healthcheck!.test).toContain('pg_isready');
  });

  it('publishes each server’s configured port on distinct host ports', () => {
    const hostPorts = holdfasts.map((name) => {
      const { config } = configFrom(services[name]!.environment!);
      expect(config.HOLDFAST_PORT).toBe(DEFAULTS.HOLDFAST_PORT);
      const [published, target] = services[name]!.ports![0]!.split(':');
      expect(Number(target)).toBe(config.HOLDFAST_PORT);
      return published;
    });
    expect(new Set(hostPorts).size).toBe(holdfasts.length);
  });

  it('the admin tokens come from a secret file whose committed example the server accepts', async () => {
    for (const name of holdfasts) {
      const env = services[name]!.environment!;
      expect(services[name]!.secrets).toEqual(['holdfast-tokens']);
      expect(env.HOLDFAST_ADMIN_TOKENS_FILE).toBe('/run/secrets/holdfast-tokens');
    }
    const secretFile = fromCompose(compose.secrets['holdfast-tokens']!.file);
    // The real file is the operator's (git- and docker-ignored); the example is what they copy.
    const example = secretFile.replace(/\.json$/, '.example.json');
    expect(existsSync(example)).toBe(true);
    expect((await AdminTokens.fromFile(example)).size).toBe(2);
    expect(read('.gitignore')).toContain(path.relative(root, secretFile));
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
    const [published, prometheusPort] = services.prometheus!.ports![0]!.split(':');
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
