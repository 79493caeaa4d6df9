/**
 * Issue 25 (console replicas): HOLDFAST_CONSOLE_SECRET_FILE gives every console replica, and a
 * restarted console, the same seal secret; a file others can read, or a short one, is refused
 * naming the fix; without it each process makes its own random secret.
 */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConsoleSecretError, loadConsoleSecret } from '../../app/lib/server/console-secret.js';

const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-console-secret-'));
const file = (name: string, text: string, mode: number) => {
  const target = path.join(dir, name);
  writeFileSync(target, text);
  chmodSync(target, mode);
  return target;
};

describe('the console secret', () => {
  it('is the first line of HOLDFAST_CONSOLE_SECRET_FILE, the same for every reader', () => {
    const secretFile = file('good', `${'a1'.repeat(32)}\nignored\n`, 0o600);
    expect(loadConsoleSecret({ HOLDFAST_CONSOLE_SECRET_FILE: secretFile })).toBe('a1'.repeat(32));
    expect(loadConsoleSecret({ HOLDFAST_CONSOLE_SECRET_FILE: secretFile })).toBe(loadConsoleSecret({ HOLDFAST_CONSOLE_SECRET_FILE: secretFile }));
  });

  it('is refused when others can read the file, or when it is shorter than 32 characters', () => {
    const open = file('open', `${'b2'.repeat(32)}\n`, 0o644);
    expect(() => loadConsoleSecret({ HOLDFAST_CONSOLE_SECRET_FILE: open })).toThrow(ConsoleSecretError);
    expect(() => loadConsoleSecret({ HOLDFAST_CONSOLE_SECRET_FILE: open })).toThrow(/chmod 600/);
    const short = file('short', 'too-short\n', 0o600);
    expect(() => loadConsoleSecret({ HOLDFAST_CONSOLE_SECRET_FILE: short })).toThrow(/at least 32 characters/);
    expect(() => loadConsoleSecret({ HOLDFAST_CONSOLE_SECRET_FILE: path.join(dir, 'missing') })).toThrow(/cannot read/);
  });

  it('without the file, is random per process (one replica)', () => {
    const a = loadConsoleSecret({});
    expect(a.length).toBeGreaterThanOrEqual(32);
    expect(loadConsoleSecret({})).not.toBe(a);
  });
});
