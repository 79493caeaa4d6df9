/**
 * Issue 21's structure rules, kept: no file in lock/ over 400 lines (one job per file), and
 * LockService.acquire reads top to bottom in under 60 lines ("try, record the wait, wait, try again").
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourcesUnder(full);
    return name.endsWith('.ts') ? [full] : [];
  });
}

describe('core structure (issue 21)', () => {
  it('no file in lock/ is over 400 lines', () => {
    const tooLong = sourcesUnder(path.join(root, 'lock'))
      .map((file) => ({ file: path.relative(root, file), lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
      .filter(({ lines }) => lines > 400);
    expect(tooLong).toEqual([]);
  });

  it('LockService.acquire is under 60 lines', () => {
    const lines = readFileSync(path.join(root, 'lock/core/lock-service.ts'), 'utf8').split('\n');
    const start = lines.findIndex((line) => /^ {2}async acquire\(/.test(line));
    expect(start).toBeGreaterThan(0);
    const end = lines.findIndex((line, index) => index > start && line === '  }');
    expect(end - start + 1).toBeLessThan(60);
  });
});
