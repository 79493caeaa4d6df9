/** `holdfast version`: this CLI's version and, when reachable, the server's (holdfast_build_info). */
import type { Command } from 'commander';
import { cliVersion } from '../cli-version.js';
import type { CliContext } from '../context.js';
import { formatTable } from '../format.js';

export function registerVersion(program: Command, ctx: CliContext): void {
  program
    .command('version')
    .description("print the CLI's version and the server's (if it answers)")
    .action(async () => {
      const cli = { version: cliVersion(), nodeVersion: process.version };
      let server: { url: string; reachable: boolean; version?: string; nodeVersion?: string; error?: string };
      try {
        server = { url: ctx.url, reachable: true, ...(await (await ctx.api()).buildInfo()) };
      } catch (error) {
        server = { url: ctx.url, reachable: false, error: (error as Error).message };
      }
      ctx.print({ cli, server }, () =>
        formatTable(
          ['', 'VERSION', 'NODE'],
          [
            ['cli', cli.version, cli.nodeVersion],
            ['server', server.reachable ? (server.version ?? 'unknown') : `unreachable (${server.url})`, server.nodeVersion ?? ''],
          ],
        ),
      );
    });
}
