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
  if (!process.env.HOLDFAST_RUNTIME) {
    execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
    process.env.HOLDFAST_RUNTIME = 'dist';
  }
  return serverRuntime();
}

/** What bin/holdfast.js runs for a server started now, in words for a results table. */
export function serverRuntime(): string {
  switch (process.env.HOLDFAST_RUNTIME) {
    case 'dist':
      return 'the compiled build (dist/)';
    case 'tsx':
      return 'the TypeScript sources through tsx (HOLDFAST_RUNTIME=tsx)';
    default:
      return 'dist/ when current, else the TypeScript sources through tsx';
  }
}
