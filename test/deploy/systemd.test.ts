/**
 * deploy/systemd/holdfast.service, read as an INI file: it runs `holdfast
 * server` from a production install as an unprivileged user, with
 * configuration the server knows, stops it with the signal it handles, and
 * the paths it names agree with each other and the repository.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliCommands, configFrom, DEFAULTS, read, root } from './recipes.js';

/** section → key → values (a key may repeat, as Environment= does). */
function parseUnit(text: string): Record<string, Record<string, string[]>> {
  const unit: Record<string, Record<string, string[]>> = {};
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1]!;
      unit[section] = {};
      continue;
    }
    const [, key, value] = /^([A-Za-z]+)=(.*)$/.exec(line)!;
    (unit[section]![key!] ??= []).push(value!);
  }
  return unit;
}

const unit = parseUnit(read('deploy/systemd/holdfast.service'));
const service = unit.Service!;
const single = (key: string) => {
  expect(service[key], key).toHaveLength(1);
  return service[key]![0]!;
};
const INSTALL_DIR = single('WorkingDirectory');

describe('deploy/systemd/holdfast.service', () => {
  it('has Unit, Service and Install sections, wanted by multi-user.target', () => {
    expect(Object.keys(unit)).toEqual(['Unit', 'Service', 'Install']);
    expect(unit.Install!.WantedBy).toEqual(['multi-user.target']);
  });

  it('ExecStart runs `node <install>/bin/holdfast.js server`, a file and a command that exist', () => {
    const [node, script, command, ...rest] = single('ExecStart').split(/\s+/);
    expect(node).toMatch(/^\/usr\/(local\/)?bin\/node$/);
    expect(rest).toEqual([]);
    expect(script!.startsWith(`${INSTALL_DIR}/`)).toBe(true);
    expect(existsSync(path.join(root, path.relative(INSTALL_DIR, script!)))).toBe(true);
    expect(cliCommands()).toContain(command);
  });

  it('runs as an unprivileged user', () => {
    expect(single('User')).not.toMatch(/^(root|0)$/);
    expect(single('NoNewPrivileges')).toBe('true');
  });

  it('its environment is configuration the server knows, on the default port, writing only its state directory', () => {
    const env = Object.fromEntries(
      service.Environment!.flatMap((line) => line.split(/\s+/)).map((pair) => pair.split('=') as [string, string]),
    );
    const { config, unknown } = configFrom(env);
    expect(unknown).toEqual([]);
    expect(config.HOLDFAST_PORT).toBe(DEFAULTS.HOLDFAST_PORT);
    expect(config.HOLDFAST_DATA_DIR).toBe(`/var/lib/${single('StateDirectory')}`);
    expect(single('ReadWritePaths')).toBe(config.HOLDFAST_DATA_DIR);
    expect(single('ProtectSystem')).toBe('strict');
    expect(single('EnvironmentFile')).toMatch(/^-\//);
  });

  it('stops with SIGTERM (the server drains and exits 0 on it) and restarts on failure', () => {
    expect(single('KillSignal')).toBe('SIGTERM');
    expect(read('cli/run-server.ts')).toContain("process.on('SIGTERM'");
    expect(single('Restart')).toBe('on-failure');
  });

  it('the install steps it documents copy what a production install needs', () => {
    const text = read('deploy/systemd/holdfast.service');
    for (const needed of ['package.json', 'package-lock.json', 'client/package.json', 'bin/', 'dist/', 'npm ci --omit=dev', 'npm run build']) {
      expect(text, needed).toContain(needed);
    }
    expect(read('package.json')).toContain('"build": "tsc -p tsconfig.build.json');
  });
});
