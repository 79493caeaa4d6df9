/**
 * The layer rules of README "Layout", enforced by dependency-cruiser with
 * .dependency-cruiser.cjs: the real source tree has no violation, and every
 * rule does fire on a small tree that breaks it (so a rule that silently
 * stopped matching — a renamed folder, a resolver change — fails here).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const config = path.join(root, '.dependency-cruiser.cjs');
const depcruise = path.join(root, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
const SOURCE_FOLDERS = ['contract', 'client', 'lock', 'exporter', 'app', 'cli', 'bin', 'alerts', 'dashboards', 'scripts', 'demo', 'deploy'];

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

function cruise(cwd: string, folders: string[]): { violations: Violation[]; modules: number; unresolved: string[] } {
  let stdout: string;
  try {
    stdout = execFileSync(process.execPath, [depcruise, '--config', config, '--output-type', 'json', ...folders], {
      cwd,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (error) {
    // depcruise exits with the number of errors found; the JSON report is still on stdout.
    stdout = (error as { stdout: string }).stdout;
  }
  const report = JSON.parse(stdout) as {
    summary: { violations: Violation[]; totalCruised: number };
    modules: { source: string; dependencies: { module: string; couldNotResolve: boolean; dependencyTypes: string[] }[] }[];
  };
  const unresolved = report.modules.flatMap((m) =>
    m.dependencies.filter((d) => d.couldNotResolve).map((d) => `${m.source} -> ${d.module}`),
  );
  return { violations: report.summary.violations, modules: report.summary.totalCruised, unresolved };
}

describe('layer rules (dependency-cruiser)', () => {
  it('the source tree breaks none, and every import resolves (so none slips past unseen)', () => {
    const result = cruise(root, SOURCE_FOLDERS);
    expect(result.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`)).toEqual([]);
    expect(result.unresolved).toEqual([]);
    expect(result.modules).toBeGreaterThan(100);
  });

  describe('each rule fires on a tree that breaks it', () => {
    const fixture = mkdtempSync(path.join(tmpdir(), 'holdfast-layers-'));
    afterAll(() => rmSync(fixture, { recursive: true, force: true }));
    const files: Record<string, string> = {
      'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'ESNext', moduleResolution: 'Bundler', strict: true } }),
      'contract/records.ts': "import { x } from '../lock/store/spi.js';\nexport const r = x;\n",
      'client/meters.ts': "import { r } from '../contract/records.js';\nimport { y } from '../exporter/events.js';\nexport const m = [r, y];\n",
      'app/page.ts': "import { x } from '../lock/store/spi.js';\nexport const p = x;\n",
      'alerts/rules.ts': "import { d } from '../dashboards/panel.js';\nexport const a = d;\n",
      'dashboards/panel.ts': "import { c } from '../cli/main.js';\nexport const d = c;\n",
      'cli/main.ts': 'export const c = 1;\n',
      'lock/store/spi.ts': 'export const x = 1;\n',
      'lock/store/sql/sql-store.ts': "import { s } from '../../core/lock-service.js';\nexport const q = s;\n",
      'lock/core/lock-service.ts':
        "import { q } from '../store/sql/sql-store.js';\nimport { h } from '../http/server.js';\nimport { y } from '../../exporter/events.js';\nimport { z } from '../../exporter/render-metrics.js';\nexport const s = [q, h, y, z];\n",
      'lock/http/server.ts': "import { c } from '../../client/meters.js';\nexport const h = c;\n",
      'exporter/events.ts': "import { h } from '../lock/http/server.js';\nexport const y = h;\n",
      'exporter/render-metrics.ts': 'export const z = 1;\n',
      'exporter/outcomes.ts': 'export const o = 1;\n',
      'lock/holdfast-server.ts':
        "import { y } from '../exporter/events.js';\nimport { o } from '../exporter/outcomes.js';\nexport const w = [y, o];\n",
      'lock/config.ts': "import { y } from '../exporter/events.js';\nexport const k = y;\n",
    };
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(fixture, file)), { recursive: true });
      writeFileSync(path.join(fixture, file), text);
    }
    const found = cruise(fixture, ['contract', 'client', 'app', 'alerts', 'dashboards', 'cli', 'lock', 'exporter']).violations.map(
      (v) => `${v.rule.name}: ${v.from} -> ${v.to}`,
    );

    it.each([
      'contract-is-the-leaf: contract/records.ts -> lock/store/spi.ts',
      'client-only-contract: client/meters.ts -> exporter/events.ts',
      'app-only-contract: app/page.ts -> lock/store/spi.ts',
      'alerts-only-contract: alerts/rules.ts -> dashboards/panel.ts',
      'dashboards-only-contract-and-alerts: dashboards/panel.ts -> cli/main.ts',
      'lock-not-up: lock/http/server.ts -> client/meters.ts',
      'lock-core-names-no-store: lock/core/lock-service.ts -> lock/store/sql/sql-store.ts',
      'lock-core-no-http: lock/core/lock-service.ts -> lock/http/server.ts',
      'lock-store-only-down: lock/store/sql/sql-store.ts -> lock/core/lock-service.ts',
      'exporter-not-core-or-http: exporter/events.ts -> lock/http/server.ts',
      // lock/core has no allowance at all (its telemetry goes through contract/lock-events.ts).
      'lock-not-exporter: lock/core/lock-service.ts -> exporter/events.ts',
      'lock-not-exporter: lock/core/lock-service.ts -> exporter/render-metrics.ts',
      // The composition root's temporary allowance names exact files: events.ts yes, outcomes.ts no.
      'lock-not-exporter: lock/holdfast-server.ts -> exporter/outcomes.ts',
      'lock-not-exporter: lock/config.ts -> exporter/events.ts',
    ])('%s', (violation) => {
      expect(found).toContain(violation);
    });

    it('no-circular: a cycle through the layers is reported', () => {
      expect(found.filter((v) => v.startsWith('no-circular:')).length).toBeGreaterThan(0);
    });

    it('the allowed import stays allowed (holdfast-server.ts -> exporter/events.ts)', () => {
      expect(found).not.toContain('lock-not-exporter: lock/holdfast-server.ts -> exporter/events.ts');
    });
  });
});
