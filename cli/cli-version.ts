/**
 * The CLI's own version: `version` of the holdfast package.json, found by walking
 * up from this file (cli/ in a checkout, dist/cli/ when compiled, wherever the
 * package was installed).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function cliVersion(from = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      try {
        const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
        if (manifest.name === 'holdfast' && manifest.version) return manifest.version;
      } catch {
        // An unreadable manifest on the way up: keep walking.
      }
    }
    if (dirname(dir) === dir) return 'unknown';
  }
}
