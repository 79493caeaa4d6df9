#!/usr/bin/env node
// The package's bin. Runs the compiled CLI (dist/cli/main.js, `npm run build`) with plain node when it can,
// else the TypeScript sources through tsx's loader (Node 20 cannot strip types):
//   - no TypeScript sources beside it (a production install, the container image): dist/, always;
//   - a checkout: dist/ only while it is at least as new as every source it compiles, so an edit never
//     runs stale code; otherwise tsx (a dev dependency);
//   - HOLDFAST_RUNTIME=dist or =tsx forces one (benchmarks compare the two).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const compiled = join(root, 'dist/cli/main.js');
const source = join(root, 'cli/main.ts');
const COMPILED_FOLDERS = ['server', 'lock', 'exporter', 'contract', 'cli', 'client'];

function newestSourceMillis(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    // Build output and installed packages are not sources (client/dist is the SDK's own tsup build).
    if (entry.isDirectory() && (entry.name === 'dist' || entry.name === 'node_modules')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSourceMillis(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

function compiledIsCurrent() {
  if (!existsSync(compiled)) return false;
  if (!existsSync(source)) return true;
  const built = statSync(compiled).mtimeMs;
  return COMPILED_FOLDERS.every((folder) => !existsSync(join(root, folder)) || newestSourceMillis(join(root, folder)) <= built);
}

const wanted = process.env.HOLDFAST_RUNTIME;
if (wanted !== undefined && wanted !== 'dist' && wanted !== 'tsx') {
  process.stderr.write(`holdfast: HOLDFAST_RUNTIME must be "dist" or "tsx", not "${wanted}"\n`);
  process.exit(2);
}
const useCompiled = wanted === 'dist' || (wanted !== 'tsx' && compiledIsCurrent());

if (useCompiled) {
  if (!existsSync(compiled)) {
    process.stderr.write('holdfast: dist/cli/main.js is missing: run `npm run build` first\n');
    process.exit(1);
  }
  await import(pathToFileURL(compiled).href);
} else {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    process.stderr.write('holdfast: no compiled build (npm run build) and no tsx to run the TypeScript sources\n');
    process.exit(1);
  }
  register();
  await import(pathToFileURL(source).href);
}
