/**
 * Every alert links to a runbook that exists, every runbook is reachable from
 * an alert or another runbook, and every alert runbook gives on-call what they
 * need: the console page, the `holdfast` CLI command and the PromQL to run.
 */
import { existsSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { runbookPath } from '../../alerts/define-alert.js';
import { repoConfig } from '../../scripts/gen.js';
import { REPO_ROOT, alertingRules, alertNames, read, runbookPaths } from './sources.js';
import { buildProgram } from '../../cli/program.js';

/** Console pages of the operations console (app/). */
const CONSOLE_PAGES = ['/', '/locks', '/locks/<key>', '/sessions', '/audit'];

/**
 * The `holdfast` CLI surface, read from its commander tree (cli/program.ts):
 * command words → the flags each accepts, plus the global ones (--url, -o, --json, …).
 */
function cliSurface(): { commands: Record<string, readonly string[]>; globalFlags: readonly string[] } {
  const { program } = buildProgram();
  const flags = (command: Command) => command.options.filter((o) => !o.hidden).flatMap((o) => [o.long, o.short].filter((f): f is string => f !== undefined));
  const commands: Record<string, readonly string[]> = {};
  const walk = (command: Command, path: string) => {
    for (const sub of command.commands) {
      const words = path ? `${path} ${sub.name()}` : sub.name();
      commands[words] = flags(sub);
      walk(sub, words);
    }
  };
  walk(program, '');
  return { commands, globalFlags: flags(program) };
}
const { commands: CLI, globalFlags: GLOBAL_FLAGS } = cliSurface();

const INDEX = 'runbooks/README.md';
const PROCEDURES = ['runbooks/force-revoke.md', 'runbooks/session-kill.md'];

function relativeLinks(path: string): string[] {
  return [...read(path).matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z]+:/.test(target));
}

function shellBlocks(path: string): string[] {
  return [...read(path).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** `holdfast …` invocations in a runbook's sh blocks, as argument lists. */
function cliInvocations(path: string): string[][] {
  return shellBlocks(path)
    .flatMap((block) => block.split('\n'))
    .map((line) => line.replace(/^\s*(time\s+)?/, ''))
    .filter((line) => line.startsWith('holdfast '))
    .map((line) => (line.match(/"[^"]*"|'[^']*'|\S+/g) ?? []).slice(1));
}

const RUNBOOK_BASE_URL = repoConfig().runbookBaseUrl;
const alertRunbooks = () => alertNames().map((name) => runbookPath(name));

describe('runbook links', () => {
  it('every runbook_url is the base URL plus a runbook file that exists', () => {
    const problems = alertingRules().flatMap((rule) => {
      const url = rule.annotations?.runbook_url ?? '';
      const expected = `${RUNBOOK_BASE_URL}${runbookPath(rule.alert!).replace(/^runbooks\//, '')}`;
      const file = `runbooks/${url.slice(RUNBOOK_BASE_URL.length)}`;
      return [
        ...(url === expected ? [] : [`${rule.alert}: runbook_url ${url} is not ${expected}`]),
        ...(existsSync(join(REPO_ROOT, file)) ? [] : [`${rule.alert}: ${file} does not exist`]),
      ];
    });
    expect(alertingRules().length).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });

  it('every runbook is linked: by an alert, or (procedures) from another runbook', () => {
    const linkedByAlerts = new Set(alertRunbooks());
    const linkedByRunbooks = new Set(
      runbookPaths().flatMap((path) => relativeLinks(path).map((target) => normalize(join(dirname(path), target)))),
    );
    const orphans = runbookPaths().filter((path) => path !== INDEX && !linkedByAlerts.has(path) && !linkedByRunbooks.has(path));
    expect(orphans).toEqual([]);
    for (const procedure of PROCEDURES) expect(runbookPaths()).toContain(procedure);
  });

  it('every relative link in a runbook resolves to a file in the repository', () => {
    const broken = runbookPaths().flatMap((path) =>
      relativeLinks(path)
        .filter((target) => !existsSync(join(REPO_ROOT, dirname(path), target)))
        .map((target) => `${path} → ${target}`),
    );
    expect(broken).toEqual([]);
  });

  it('the runbook index lists every alert', () => {
    const index = read(INDEX);
    expect(alertNames().filter((name) => !index.includes(`| ${name} |`))).toEqual([]);
  });
});

describe('runbook content', () => {
  it('every alert runbook has meaning, impact, diagnosis, mitigation and escalation sections', () => {
    const missing = alertRunbooks().flatMap((path) =>
      ['Meaning', 'Impact', 'Diagnosis', 'Mitigation', 'Escalation']
        .filter((section) => !new RegExp(`^## ${section}$`, 'm').test(read(path)))
        .map((section) => `${path}: ## ${section}`),
    );
    expect(missing).toEqual([]);
  });

  it('every alert runbook and procedure names a console page, a holdfast CLI command and PromQL', () => {
    const problems = [...alertRunbooks(), ...PROCEDURES].flatMap((path) => {
      const text = read(path);
      const pages = CONSOLE_PAGES.filter((page) => text.includes(`\`${page}\``));
      return [
        ...(pages.length > 0 ? [] : [`${path}: names no console page`]),
        ...(cliInvocations(path).length > 0 ? [] : [`${path}: no holdfast command in an sh block`]),
        ...(/```promql\n/.test(text) ? [] : [`${path}: no PromQL block`]),
      ];
    });
    expect(problems).toEqual([]);
  });

  it('the CLI has the on-call commands the runbooks rely on', () => {
    expect(CLI['locks ls']).toEqual(expect.arrayContaining(['--prefix', '--sort', '--older-than', '--owner', '--session']));
    for (const command of ['locks show', 'revoke', 'sessions ls', 'sessions show', 'sessions kill', 'audit', 'lock', 'status', 'version']) {
      expect(CLI[command], command).toBeDefined();
    }
    expect(GLOBAL_FLAGS).toEqual(expect.arrayContaining(['--url', '--json', '-o', '--output']));
  });

  it('every holdfast command in the runbooks exists in the CLI, with flags it accepts', () => {
    const problems: string[] = [];
    for (const path of runbookPaths()) {
      for (const args of cliInvocations(path)) {
        const command = [args.slice(0, 2).join(' '), args[0] ?? ''].find((candidate) => CLI[candidate] !== undefined);
        if (!command) {
          problems.push(`${path}: unknown command "holdfast ${args.join(' ')}"`);
          continue;
        }
        const flags = args.filter((arg) => arg.startsWith('--'));
        for (const flag of flags) {
          if (!CLI[command]!.includes(flag) && !GLOBAL_FLAGS.includes(flag)) problems.push(`${path}: holdfast ${command} has no ${flag}`);
        }
        if (['revoke', 'sessions kill'].includes(command) && !flags.includes('--reason')) {
          problems.push(`${path}: holdfast ${command} needs --reason`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('the procedures show how to verify the audit trail afterwards', () => {
    for (const path of PROCEDURES) {
      const commands = cliInvocations(path).map((args) => args.join(' '));
      expect(commands.some((c) => c.startsWith('audit --verify')), path).toBe(true);
      expect(read(path)).toContain('`/audit`');
    }
  });
});
