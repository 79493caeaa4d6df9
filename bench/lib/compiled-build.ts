/**
 * Benchmarks run `holdfast server` as a production install does: the compiled build, made now from
 * these sources. Otherwise the bin runs tsx whenever dist/ is missing or older than a source (a
 * fresh clone, any edit), which doubled the server's CPU per heartbeat in bench:scale (0.237 against
 * 0.112 ms on the full step) and made runs incomparable. HOLDFAST_RUNTIME set by the caller wins
 * (`HOLDFAST_RUNTIME=tsx` measures the sources as they are, without a build).
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Builds dist/ and pins the bin to it, unless HOLDFAST_RUNTIME was set; answers what servers will run. */
export function useCompiledBuild(): string {
  const chosen = process.env.HOLDFAST_RUNTIME;
  if (chosen) return `HOLDFAST_RUNTIME=${chosen}`;
  execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  process.env.HOLDFAST_RUNTIME = 'dist';
  return 'the compiled build (`npm run build` at the start)';
}
