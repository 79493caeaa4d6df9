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
const SOURCE_FOLDERS = ['contract', 'client', 'lock', 'exporter', 'server', 'app', 'cli', 'bin', 'alerts', 'dashboards', 'scripts', 'demo', 'deploy'];

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
      // lock/http/server.ts once imported exporter/ under a temporary allowance; there is none now.
      'lock/http/server.ts':
        "import { c } from '../../client/meters.js';\nimport { o } from '../../exporter/outcomes.js';\nexport const h = [c, o];\n",
      'exporter/events.ts': "import { h } from '../lock/http/server.js';\nexport const y = h;\n",
      'exporter/render-metrics.ts': "import { w } from '../server/holdfast-server.js';\nexport const z = w;\n",
      'exporter/outcomes.ts': 'export const o = 1;\n',
      // The composition root may wire lock/, exporter/ and contract/; app/ is not among them.
      'server/holdfast-server.ts':
        "import { h } from '../lock/http/server.js';\nimport { y } from '../exporter/events.js';\nimport { r } from '../contract/records.js';\nimport { p } from '../app/page.js';\nexport const w = [h, y, r, p];\n",
      'lock/config.ts': "import { y } from '../exporter/events.js';\nexport const k = y;\n",
      'cli/run-server.ts': "import { w } from '../server/holdfast-server.js';\nexport const run = w;\n",
      'cli/commands/status.ts': "import { w } from '../../server/holdfast-server.js';\nexport const st = w;\n",
    };
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(fixture, file)), { recursive: true });
      writeFileSync(path.join(fixture, file), text);
    }
    const found = cruise(fixture, ['contract', 'client', 'app', 'alerts', 'dashboards', 'cli', 'lock', 'exporter', 'server']).violations.map(
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
      // No allowance: neither lock/core nor lock/http nor any other lock/ file imports exporter/.
      'lock-not-exporter: lock/core/lock-service.ts -> exporter/events.ts',
      'lock-not-exporter: lock/core/lock-service.ts -> exporter/render-metrics.ts',
      'lock-not-exporter: lock/http/server.ts -> exporter/outcomes.ts',
      'lock-not-exporter: lock/config.ts -> exporter/events.ts',
      'server-wires-lock-and-exporter: server/holdfast-server.ts -> app/page.ts',
      'server-only-from-entry-points: exporter/render-metrics.ts -> server/holdfast-server.ts',
      'server-only-from-entry-points: cli/commands/status.ts -> server/holdfast-server.ts',
    ])('%s', (violation) => {
      expect(found).toContain(violation);
    });

    it('no-circular: a cycle through the layers is reported', () => {
      expect(found.filter((v) => v.startsWith('no-circular:')).length).toBeGreaterThan(0);
    });

    it('the composition root may wire lock/, exporter/ and contract/, and `holdfast server` may start it', () => {
      expect(found.filter((v) => v.startsWith('server-wires-lock-and-exporter:'))).toEqual([
        'server-wires-lock-and-exporter: server/holdfast-server.ts -> app/page.ts',
      ]);
      expect(found.filter((v) => v.includes(' cli/run-server.ts -> '))).toEqual([]);
    });
  });
});
