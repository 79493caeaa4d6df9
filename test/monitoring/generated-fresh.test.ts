/**
 * The committed dashboards and rule files are exactly what the generators
 * produce from the current metric table: no hand edits, no stale output.
 * Fix a failure with `npm run gen` and commit the result.
 */
import { describe, expect, it } from 'vitest';
import { generatedFiles } from '../../scripts/gen.js';
import { dashboardPaths, dashboards, panelsOf, read, ruleFilePaths } from './sources.js';

describe('generated monitoring files', () => {
  const generated = generatedFiles();

  it('generates the two rule files, the Alertmanager config and the two dashboards', () => {
    expect(Object.keys(generated).sort()).toEqual([
      'alerts/alertmanager/alertmanager.yml',
      'alerts/holdfast-health.rules.yml',
      'alerts/holdfast-slo.rules.yml',
      'dashboards/holdfast-overview.json',
      'dashboards/holdfast-slo.json',
    ]);
  });

  it.each(Object.keys(generatedFiles()))('%s equals the generator output (run `npm run gen`)', (path) => {
    expect(read(path)).toBe(generated[path]);
  });

  it('no committed rule file or dashboard is left over from an older generator', () => {
    const committed = [...ruleFilePaths(), ...dashboardPaths()];
    expect(committed.filter((path) => generated[path] === undefined)).toEqual([]);
  });

  it('generation is deterministic', () => {
    expect(generatedFiles()).toEqual(generated);
  });

  it('docs/monitoring.md lists every panel of the overview dashboard', () => {
    const docs = read('docs/monitoring.md');
    const overview = dashboards().find(({ dashboard }) => dashboard.uid === 'holdfast-overview')!.dashboard;
    const titles = panelsOf(overview).map((panel) => panel.title);
    expect(titles.length).toBeGreaterThan(10);
    expect(titles.filter((title) => !docs.includes(`| ${title} |`))).toEqual([]);
  });
});
