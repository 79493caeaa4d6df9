/**
 * Shared facts for the static deployment-recipe tests (no container runs here):
 * the repository root, the server's configuration defaults, the CLI's
 * commands, what `npm run build` emits, and the job the generated rules select.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { loadConfig, type ServerConfig } from '../../lock/config.js';

export const root = path.resolve(import.meta.dirname, '../..');

export const read = (file: string): string => readFileSync(path.join(root, file), 'utf8');
/** `merge`: Compose files share settings through YAML merge keys (`<<: *anchor`). */
export const readYaml = <T = Record<string, unknown>>(file: string): T => parse(read(file), { merge: true }) as T;
export const readYamlDocuments = <T = Record<string, unknown>>(file: string): T[] =>
  parseAllDocuments(read(file)).map((doc) => doc.toJS() as T);

/** The server's defaults: what a recipe that sets nothing gets. */
export const DEFAULTS: ServerConfig = loadConfig({});

/**
 * Loads `env` the way the server does, and says which of its variables the
 * server does not know (zod strips unknown keys, so a typo would pass silently).
 */
export function configFrom(env: Record<string, string>): { config: ServerConfig; unknown: string[] } {
  const config = loadConfig(env);
  const known = new Set(Object.keys(config));
  const unknown = Object.keys(env).filter((name) => name !== 'NODE_ENV' && !known.has(name));
  return { config, unknown };
}

/** The CLI's top-level commands, from `holdfast --help` as a user would see them. */
export function cliCommands(): string[] {
  const help = execFileSync(process.execPath, [path.join(root, 'bin/holdfast.js'), '--help'], {
    encoding: 'utf8',
    env: { ...process.env, HOLDFAST_RUNTIME: 'tsx' },
  });
  const commands = help.slice(help.indexOf('Commands:'));
  return [...commands.matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1]!);
}

/** What `tsc -p tsconfig.build.json` emits for a source file: dist/<same path>.js. */
export function builtFiles(): Set<string> {
  const build = JSON.parse(read('tsconfig.build.json')) as { compilerOptions: { outDir: string; rootDir: string }; include: string[] };
  const folders = build.include.map((pattern) => pattern.split('/')[0]!);
  const out = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.ts')) out.add(`${build.compilerOptions.outDir}/${rel.replace(/\.ts$/, '.js')}`);
    }
  };
  for (const folder of folders) walk(folder);
  return out;
}

/** The generated rule files, read now (another change may regenerate them). */
export function ruleFilePaths(): string[] {
  return readdirSync(path.join(root, 'alerts'))
    .filter((name) => name.endsWith('.rules.yml'))
    .sort()
    .map((name) => `alerts/${name}`);
}

/** Every `job` matcher in the generated rules, as [operator, value]. */
export function jobMatchers(): [string, string][] {
  return ruleFilePaths().flatMap((file) => [...read(file).matchAll(/\bjob\s*(=~|=)\s*"([^"]*)"/g)].map((m) => [m[1]!, m[2]!] as [string, string]));
}

/** Does a scrape job named `job` satisfy every job matcher the rules use? */
export function rulesSelectJob(job: string): boolean {
  return jobMatchers().every(([op, value]) => (op === '=' ? value === job : new RegExp(`^(?:${value})$`).test(job)));
}
