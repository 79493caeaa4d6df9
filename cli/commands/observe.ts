/**
 * `holdfast observe NAME`: one line per leader change of election NAME (the SDK's
 * `client.observe`, L8 long polls), until interrupted. `-o json`: one JSON object a line.
 */
import type { Command } from 'commander';
import { LockClient, type Leader } from '../../client/index.js';
import { visibleValue } from '../../contract/wire-rules.js';
import type { CliContext } from '../context.js';

export function registerObserve(program: Command, ctx: CliContext): void {
  program
    .command('observe <name>')
    .description('print the leader of election NAME now and at every change: term, owner, value (until interrupted)')
    .addHelpText(
      'after',
      `
A line: TIME  term TERM  owner OWNER  value VALUE, or TIME  no leader. Under -o json each line is
{"at":ISO-8601,"leader":{"term","owner","value"?}|null}. SIGINT/SIGTERM end it (exit 0).`,
    )
    .action(async (name: string) => {
      const token = await ctx.token();
      const client = new LockClient({ baseUrl: ctx.url, ...(token ? { token } : {}) });
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, onSignal);
      try {
        for await (const leader of client.observe(name, { signal: stop.signal })) {
          const at = new Date().toISOString();
          process.stdout.write(`${ctx.format === 'json' ? JSON.stringify({ at, leader }) : humanLine(at, leader)}\n`);
        }
      } finally {
        for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.off(signal, onSignal);
      }
    });
}

function humanLine(at: string, leader: Leader | null): string {
  if (leader === null) return `${at}  no leader`;
  // A value is anyone's text: escaped, so it cannot write terminal control sequences or reorder the line.
  return `${at}  term ${leader.term}  owner ${leader.owner}  value ${leader.value === undefined ? '-' : `"${visibleValue(leader.value)}"`}`;
}
