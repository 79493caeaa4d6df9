/**
 * The Dockerfile, read line by line (no container can run here): its stages,
 * every path it copies, the user it runs as, the port, the health check and
 * the command — each checked against the repository, the build output and the
 * server's configuration.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { freePort } from '../support/ports.js';
import { startServer } from '../support/server.js';
import { builtFiles, cliCommands, configFrom, DEFAULTS, read, root } from './recipes.js';

interface Instruction {
  keyword: string;
  args: string;
}
interface Stage {
  name: string | undefined;
  base: string;
  instructions: Instruction[];
}

/** Instructions with continuation lines joined and comments dropped, grouped by stage. */
function parseDockerfile(text: string): Stage[] {
  const logical = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const stages: Stage[] = [];
  for (const line of logical) {
    const [, keyword, args] = /^(\S+)\s+(.*)$/.exec(line)!;
    if (keyword!.toUpperCase() === 'FROM') {
      const [, base, name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args!)!;
      stages.push({ name, base: base!, instructions: [] });
    } else {
      stages.at(-1)!.instructions.push({ keyword: keyword!.toUpperCase(), args: args! });
    }
  }
  return stages;
}

const stages = parseDockerfile(read('Dockerfile'));
const final = stages.at(-1)!;
const all = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword);
const one = (stage: Stage, keyword: string) => {
  const found = all(stage, keyword);
  expect(found, keyword).toHaveLength(1);
  return found[0]!.args;
};
const exec = (args: string): string[] => JSON.parse(args) as string[];

/** COPY [--from=stage] src… dest → { from, sources, dest }. */
function copies(stage: Stage): { from: string | undefined; sources: string[]; dest: string }[] {
  return all(stage, 'COPY').map(({ args }) => {
    const words = args.split(/\s+/);
    const from = words[0]!.startsWith('--from=') ? words.shift()!.slice('--from='.length) : undefined;
    return { from, sources: words.slice(0, -1), dest: words.at(-1)! };
  });
}

function dockerignorePatterns(): string[] {
  return read('.dockerignore')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
}

describe('Dockerfile', () => {
  it('is multi-stage: a build stage, a runtime-dependencies stage and the image, on Node 20', () => {
    expect(stages.map((s) => s.name)).toEqual(['build', 'runtime-deps', undefined]);
    for (const stage of stages) expect(stage.base).toMatch(/^node:20[.-]/);
  });

  it('the build stage compiles with tsconfig.build.json, after copying every folder it compiles', () => {
    const build = stages[0]!;
    const runs = all(build, 'RUN').map((i) => i.args);
    expect(runs).toContain('npx tsc -p tsconfig.build.json');
    const include = (JSON.parse(read('tsconfig.build.json')) as { include: string[] }).include.map((p) => p.split('/')[0]!);
    const copied = copies(build).flatMap((c) => c.sources);
    expect(include.filter((folder) => !copied.includes(folder))).toEqual([]);
    expect(copied).toContain('tsconfig.build.json');
  });

  it('the runtime dependencies are a production install (npm ci --omit=dev)', () => {
    expect(all(stages[1]!, 'RUN').map((i) => i.args).join('\n')).toMatch(/npm ci --omit=dev\b/);
  });

  it('every file it copies from the build context exists and is not excluded by .dockerignore', () => {
    const ignored = dockerignorePatterns();
    const sources = stages.flatMap((stage) => copies(stage).filter((c) => c.from === undefined).flatMap((c) => c.sources));
    expect(sources.length).toBeGreaterThan(5);
    for (const source of sources) {
      expect(existsSync(path.join(root, source)), source).toBe(true);
      expect(ignored.filter((pattern) => pattern === source || pattern === `${source}/`), source).toEqual([]);
    }
  });

  it('.dockerignore keeps local state, secrets and build output out of the context', () => {
    expect(dockerignorePatterns()).toEqual(expect.arrayContaining(['node_modules', '.git', 'dist', '.holdfast', 'deploy/holdfast-tokens.json']));
  });

  it('the image holds the compiled server only: dist/ from the build stage, bin/, the production node_modules', () => {
    const finalCopies = copies(final);
    expect(finalCopies.map((c) => `${c.from ?? 'context'}:${c.sources.join(',')}`).sort()).toEqual(
      [
        'build:/src/dist',
        'context:bin',
        'runtime-deps:/app/client/package.json',
        'runtime-deps:/app/node_modules',
        'runtime-deps:/app/package.json',
      ].sort(),
    );
    // No TypeScript source in the image: bin/holdfast.js then always runs dist/ (never tsx, which is not installed).
    expect(finalCopies.flatMap((c) => c.sources).filter((s) => /^(server|lock|exporter|contract|cli|app|client)$/.test(s))).toEqual([]);
  });

  it('its command is `node bin/holdfast.js server`, and the build emits what bin/holdfast.js runs', () => {
    const entrypoint = exec(one(final, 'ENTRYPOINT'));
    const command = exec(one(final, 'CMD'));
    expect(entrypoint).toEqual(['node', 'bin/holdfast.js']);
    expect(existsSync(path.join(root, entrypoint[1]!))).toBe(true);
    expect(read('bin/holdfast.js')).toContain("'dist/cli/main.js'");
    expect(builtFiles().has('dist/cli/main.js')).toBe(true);
    expect(cliCommands()).toContain(command[0]);
  });

  it('runs as a non-root user, with the data directory it writes owned by that user', () => {
    const user = one(final, 'USER');
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    const env = envOf(final);
    expect(all(final, 'RUN').map((i) => i.args).join('\n')).toContain(`chown ${user}:${user} ${env.HOLDFAST_DATA_DIR}`);
  });

  it('its environment is configuration the server knows, listening beyond loopback on the default port', () => {
    const env = envOf(final);
    const { config, unknown } = configFrom(env);
    expect(unknown).toEqual([]);
    expect(config.HOLDFAST_HOST).toBe('0.0.0.0');
    expect(config.HOLDFAST_PORT).toBe(DEFAULTS.HOLDFAST_PORT);
    expect(one(final, 'EXPOSE')).toBe(String(DEFAULTS.HOLDFAST_PORT));
  });

  it('HEALTHCHECK asks /healthz on the configured port (default the server default)', () => {
    const healthcheck = one(final, 'HEALTHCHECK');
    const [, options, command] = /^(.*?)\s*CMD\s+(\[.*\])$/.exec(healthcheck)!;
    expect(options).toMatch(/--interval=\d+s/);
    const argv = exec(command!);
    expect(argv[0]).toBe('node');
    expect(argv.join(' ')).toContain("'/healthz'");
    expect(argv.join(' ')).toContain(`process.env.HOLDFAST_PORT || ${DEFAULTS.HOLDFAST_PORT}`);
  });

  it('the HEALTHCHECK command passes against a live server and fails against a closed port', async () => {
    const [, command] = /CMD\s+(\[.*\])$/.exec(one(final, 'HEALTHCHECK'))!;
    const [, ...args] = exec(command!);
    const server = await startServer();
    try {
      const probe = (port: string) =>
        promisify(execFile)(process.execPath, args, { env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', HOLDFAST_PORT: port }, timeout: 10_000 }).then(
          () => 0,
          (error: { code: number }) => error.code,
        );
      expect(await probe(new URL(server.url).port)).toBe(0);
      expect(await probe(String(await freePort()))).toBe(1);
    } finally {
      await server.stop();
    }
  }, 120_000);
});

function envOf(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of all(stage, 'ENV')) {
    for (const m of args.matchAll(/(\w+)=(\S+)/g)) env[m[1]!] = m[2]!;
  }
  return env;
}
