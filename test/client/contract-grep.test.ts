import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

describe('SDK contract hygiene (criterion 10)', () => {
  it.each(['AsyncLocalStorage', 'LockOutcome'])('grep -rn %s client/ prints nothing', (word) => {
    let output = '';
    try {
      output = execFileSync('grep', ['-rn', '--exclude-dir=dist', '--exclude-dir=node_modules', word, 'client/'], { cwd: root, encoding: 'utf8' });
    } catch (e) {
      // grep exits 1 when nothing matched: the outcome we want.
      expect((e as { status: number }).status).toBe(1);
    }
    expect(output).toBe('');
  });

  // Which folders client/ may import is a layer rule: test/layers/layer-rules.test.ts (dependency-cruiser).
});
