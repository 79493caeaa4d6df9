/** `holdfast locks top [--limit N]`: the most contended keys (A7), most contended first. */
import { Option, type Command } from 'commander';
import type { AdminApi } from '../admin-api.js';
import { formatTable } from '../format.js';

export function registerLocksTop(locks: Command, api: () => Promise<AdminApi>, output: (value: unknown, human: () => string) => void): void {
  locks
    .command('top')
    .description('the most contended keys over the server\'s sliding window (viewer)')
    .addOption(new Option('--limit <n>', 'rows (1..100)').default('10'))
    .action(async (opts: { limit: string }) => {
      const top = await (await api()).contention(opts.limit);
      output(top, () => {
        const header = `most contended keys, last ${Math.round(top.windowMillis / 1000)} s`;
        const rows = top.items.map((item, i) => [
          String(i + 1),
          item.key,
          String(item.contended),
          String(item.waiters),
          item.holderSessionId ?? '(free)',
          item.holderOwner ?? '',
        ]);
        return `${header}\n${formatTable(['#', 'KEY', 'CONTENDED', 'WAITERS', 'HOLDER SESSION', 'HOLDER OWNER'], rows)}`;
      });
    });
}
