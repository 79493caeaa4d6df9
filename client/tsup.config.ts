/**
 * Builds @holdfast/client: ESM (`dist/index.js`) and CommonJS (`dist/index.cjs`),
 * each with its declarations (`.d.ts`, `.d.cts`). The contract/ modules the SDK
 * imports are bundled in, so the package depends on no server code; the optional
 * peers stay external (tsup leaves `peerDependencies` unbundled).
 */
import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  // `import.meta.url` (client/optional-peer.ts) in the CommonJS build.
  shims: true,
  platform: 'node',
  target: 'node20',
  tsconfig: 'tsconfig.build.json',
  outDir: 'dist',
  clean: true,
  sourcemap: false,
  splitting: false,
});
