import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

function clientFiles(dir = path.join(root, 'client')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? clientFiles(path.join(dir, e.name)) : [path.join(dir, e.name)],
  );
}

describe('SDK contract hygiene (criterion 10)', () => {
  it.each(['AsyncLocalStorage', 'LockOutcome'])('grep -rn %s client/ prints nothing', (word) => {
    let output = '';
    try {
      output = execFileSync('grep', ['-rn', word, 'client/'], { cwd: root, encoding: 'utf8' });
    } catch (e) {
      // grep exits 1 when nothing matched: the outcome we want.
      expect((e as { status: number }).status).toBe(1);
    }
    expect(output).toBe('');
  });

  it('imports nothing from lock/ (the SDK depends on the HTTP contract only)', () => {
    const offenders = clientFiles().filter((file) => /from '\.\.\/(\.\.\/)?lock\//.test(readFileSync(file, 'utf8')));
    expect(offenders).toEqual([]);
  });
});
