/** `holdfast server`: run the lock server. */
import type { Command } from 'commander';

export function registerServer(program: Command): void {
  program
    .command('server')
    .description('run the lock server (configured by HOLDFAST_* environment variables)')
    .action(async () => {
      const { runServer } = await import('../run-server.js');
      await runServer();
    });
}
