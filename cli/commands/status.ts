/** `holdfast status`: which server, is it reachable and ready, which store, who am I to it (and over which keys). */
import type { Command } from 'commander';
import { ApiError, type WhoAmI } from '../admin-api.js';
import type { CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { formatTable } from '../format.js';

interface Status {
  url: string;
  reachable: boolean;
  ready: boolean;
  backend?: string;
  whoami?: WhoAmI;
  problems: string[];
}

export function registerStatus(program: Command, ctx: CliContext): void {
  program
    .command('status')
    .description('server URL, reachable and ready, store backend, whom the token authenticates and its key scope (exit 1 if not ready)')
    .action(async () => {
      const api = await ctx.api();
      const status: Status = { url: ctx.url, reachable: false, ready: false, problems: [] };
      try {
        const ready = await api.readiness();
        Object.assign(status, { reachable: true, ready: ready.status === 'ready', backend: ready.backend ?? api.lastBackend });
      } catch (error) {
        if (error instanceof ApiError) Object.assign(status, { reachable: true, backend: api.lastBackend });
        status.problems.push(`readyz: ${(error as Error).message}`);
      }
      if (status.reachable) {
        try {
          status.whoami = await api.whoami();
        } catch (error) {
          status.problems.push(`whoami: ${error instanceof ApiError ? `${error.status} ${error.code}` : (error as Error).message}`);
        }
      }
      ctx.print(status, () =>
        formatTable(
          ['FIELD', 'VALUE'],
          [
            ['server', status.url],
            ['reachable', status.reachable ? 'yes' : 'no'],
            ['ready', status.ready ? 'yes' : 'no'],
            ['store', status.backend ?? 'unknown'],
            ['whoami', status.whoami ? `${status.whoami.name} (${status.whoami.role})` : 'no admin token accepted'],
            ...(status.whoami ? [['scope', scopeText(status.whoami.prefixes)]] : []),
            ...status.problems.map((problem) => ['problem', problem]),
          ],
        ),
      );
      if (!status.ready) process.exitCode = EXIT.failed;
    });
}

/** A scoped token's prefixes as the operator wrote them; an unscoped token reaches every key. */
function scopeText(prefixes: string[] | undefined): string {
  return prefixes ? `keys under ${prefixes.map((prefix) => JSON.stringify(prefix)).join(', ')}` : 'every key (unscoped)';
}
