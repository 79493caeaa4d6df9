/**
 * `holdfast lock -n N KEY -- CMD` (a semaphore, like `consul lock -n`) and `holdfast lock --shared`
 * (readers), run as the package's bin against a real server on the embedded store (issue 23 slice 2).
 * Each CMD logs `start|end ROLE TOKEN NANOS` with its HOLDFAST_FENCING_TOKEN and waits for the
 * test's go-ahead (a file named after its token) before it ends, so the test decides when a holder
 * leaves and checks the holder set at each step; afterwards the whole timeline is checked:
 * - `-n 2`: never more than two CMDs between a start and its end; every token distinct; every process ran.
 * - `--shared`: readers run at the same time; a plain `holdfast lock` on the key never overlaps any of
 *   them; a reader that arrives while the writer waits runs after it (writers do not starve).
 * Also: `locks ls` shows kind and holders/limit (and a just-made grant as "… ago", never "in 0s"),
 * `locks show` every holder, another -n is LIMIT_MISMATCH (exit 1), -n with --shared a usage error.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { LockInfo } from '../../contract/records.js';
import { eventually, httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { holdfast, startCli, type RunningCli } from './run-cli.js';

/** Long enough that a CMD's lock outlives a stalled renewal on a loaded machine; the test, not the TTL, ends each hold. */
const TTL_MILLIS = 15_000;

type Event = { what: 'start' | 'end'; role: string; token: string; at: bigint };

describe('holdfast lock -n N and --shared', () => {
  let server: TestServer;
  let api: ReturnType<typeof httpClient>;
  let dir: string;
  const running: RunningCli[] = [];

  beforeAll(async () => {
    server = await startServer({ store: 'embedded' });
    api = httpClient(server.url);
    dir = mkdtempSync(path.join(tmpdir(), 'holdfast-lock-n-'));
  });
  afterAll(async () => {
    for (const { child } of running) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** CMD: log its start, wait for `end.TOKEN` (or SIGTERM), log its end (nanoseconds of the wall clock, one machine). */
  const job = (log: string, role: string) =>
    [
      'T=$HOLDFAST_FENCING_TOKEN',
      `echo "start ${role} $T $(date +%s%N)" >> ${log}`,
      // A lost lock stops CMD (SIGTERM): that ends its hold too, and the exit code (143) fails the test with holdfast's reason.
      `trap 'echo "end ${role} $T $(date +%s%N)" >> ${log}; exit 143' TERM`,
      `while [ ! -e ${dir}/end.$T ]; do sleep 0.05; done`,
      `echo "end ${role} $T $(date +%s%N)" >> ${log}`,
    ].join('; ');
  const events = (log: string): Event[] =>
    (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : []).map((line) => {
      const [what, role, token, nanos] = line.split(' ') as ['start' | 'end', string, string, string];
      return { what, role, token, at: BigInt(nanos) };
    });
  /** Tokens whose CMD has started and not yet ended. */
  const runningTokens = (log: string) => {
    const all = events(log);
    return all.filter((e) => e.what === 'start' && !all.some((x) => x.what === 'end' && x.token === e.token)).map((e) => e.token);
  };
  const finish = (token: string) => writeFileSync(path.join(dir, `end.${token}`), '');
  const lock = (args: string[]) => {
    const cli = startCli(server, ['lock', ...args]);
    running.push(cli);
    return cli;
  };
  const read = async (key: string) => (await api.read(key)).body as LockInfo;
  /** What the lock processes said (their stderr), for a failure's message. */
  const said = () => running.map(({ child, stderr }) => `pid ${child.pid}: ${stderr().trim()}`).join('\n');
  /** The most CMDs between a start and its end at any instant of the log. */
  const mostAtOnce = (all: Event[], roles?: (role: string) => boolean) => {
    let now = 0;
    let most = 0;
    for (const e of [...all].filter((x) => roles === undefined || roles(x.role)).sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))) {
      now += e.what === 'start' ? 1 : -1;
      most = Math.max(most, now);
    }
    return most;
  };

  test('-n 2: four processes, never more than two CMDs at once, each with its own token; another -n is LIMIT_MISMATCH', async () => {
    const key = 'jobs/encode';
    const log = path.join(dir, 'semaphore.log');
    const processes = Array.from({ length: 4 }, () => lock(['-n', '2', key, '--ttl', String(TTL_MILLIS), '--', 'sh', '-c', job(log, 'permit')]));

    // Two run, two wait on the server.
    await eventually(async () => runningTokens(log).length === 2 && (await read(key)).waiterCount >= 2, 60_000);
    expect(runningTokens(log)).toHaveLength(2);
    const held = await read(key);
    expect({ mode: held.mode, limit: held.limit }).toEqual({ mode: 'exclusive', limit: 2 });
    expect(held.holders.map((h) => h.fencingToken).sort(), said()).toEqual([...runningTokens(log)].sort());

    // locks ls: kind and holders/limit; the grants are seconds old at most and read "… ago".
    const ls = await holdfast(server, ['locks', 'ls', '--prefix', key]);
    expect(ls.code, ls.stderr).toBe(0);
    const row = ls.stdout.split('\n').find((line) => line.trimStart().startsWith(key))!;
    expect(row, ls.stdout).toMatch(/\bsemaphore\s+2\/2$/);
    expect(row).toMatch(/\b\d+[smh] ago\b/);
    expect(ls.stdout).not.toMatch(/\bin 0s\b/);
    // locks show: every holder with its token and owner.
    const show = await holdfast(server, ['locks', 'show', key]);
    expect(show.code, show.stderr).toBe(0);
    for (const holder of held.holders) expect(show.stdout).toMatch(new RegExp(`^\\s*${holder.fencingToken}\\s+holdfast lock .+ pid \\d+`, 'm'));

    // Another limit while the key is held: refused, CMD never runs.
    const mismatch = await holdfast(server, ['lock', '-n', '3', key, '--', 'sh', '-c', `echo ran >> ${dir}/mismatch.log`]);
    expect(mismatch.code, mismatch.stderr).toBe(1);
    expect(mismatch.stderr).toMatch(/LIMIT_MISMATCH|another limit/);
    expect(existsSync(path.join(dir, 'mismatch.log'))).toBe(false);

    // One leaves at a time: the next one starts, never a third beside the two.
    for (let started = 2; started < 4; started += 1) {
      finish(runningTokens(log)[0]!);
      await eventually(async () => events(log).filter((e) => e.what === 'start').length === started + 1, 60_000);
      expect(runningTokens(log).length).toBeLessThanOrEqual(2);
    }
    for (const token of runningTokens(log)) finish(token);
    const results = await Promise.all(processes.map((p) => p.done));
    expect(results.map((r) => r.code), results.map((r) => r.stderr).join('\n')).toEqual([0, 0, 0, 0]);

    const all = events(log);
    expect(all.filter((e) => e.what === 'start')).toHaveLength(4);
    expect(all.filter((e) => e.what === 'end')).toHaveLength(4);
    expect(new Set(all.filter((e) => e.what === 'start').map((e) => e.token)).size).toBe(4);
    expect(mostAtOnce(all)).toBe(2);
    expect((await read(key)).held).toBe(false);
  }, 300_000);

  test('--shared: readers run together, a plain lock never beside any of them, a reader arriving behind the waiting writer runs after it', async () => {
    const key = 'db/reports';
    const log = path.join(dir, 'shared.log');
    const readers = Array.from({ length: 3 }, () => lock(['--shared', key, '--ttl', String(TTL_MILLIS), '--', 'sh', '-c', job(log, 'reader')]));
    await eventually(async () => runningTokens(log).length === 3, 60_000);
    expect((await read(key)).mode).toBe('shared');
    const ls = await holdfast(server, ['locks', 'ls', '--prefix', key]);
    expect(ls.stdout.split('\n').find((line) => line.trimStart().startsWith(key)), `${ls.stdout}\n${said()}`).toMatch(/\bshared\s+3$/);

    const writer = lock([key, '--ttl', String(TTL_MILLIS), '--', 'sh', '-c', job(log, 'writer')]);
    await eventually(async () => (await read(key)).waiterCount >= 1, 60_000);
    const late = lock(['--shared', key, '--ttl', String(TTL_MILLIS), '--', 'sh', '-c', job(log, 'late-reader')]);
    await eventually(async () => (await read(key)).waiterCount >= 2, 60_000);
    // The writer waits, so the late reader does too, though only readers hold the key.
    expect(events(log).filter((e) => e.role !== 'reader')).toEqual([]);

    for (const token of runningTokens(log)) finish(token);
    await eventually(async () => events(log).some((e) => e.role === 'writer'), 60_000);
    expect(events(log).filter((e) => e.role === 'late-reader')).toEqual([]);
    finish(events(log).find((e) => e.role === 'writer')!.token);
    await eventually(async () => events(log).some((e) => e.role === 'late-reader'), 60_000);
    finish(events(log).find((e) => e.role === 'late-reader')!.token);
    const results = await Promise.all([...readers, writer, late].map((p) => p.done));
    expect(results.map((r) => r.code), results.map((r) => r.stderr).join('\n')).toEqual([0, 0, 0, 0, 0]);

    const all = events(log);
    expect(new Set(all.filter((e) => e.what === 'start').map((e) => e.token)).size).toBe(5);
    expect(mostAtOnce(all, (role) => role === 'reader')).toBe(3);
    const [writerStart, writerEnd] = ['start', 'end'].map((what) => all.find((e) => e.role === 'writer' && e.what === what)!.at);
    for (const reader of all.filter((e) => e.what === 'start' && e.role !== 'writer')) {
      const end = all.find((e) => e.what === 'end' && e.token === reader.token)!.at;
      expect(end < writerStart! || reader.at > writerEnd!, `reader ${reader.token} overlaps the writer`).toBe(true);
    }
    // Every grant draws from the one sequence: the writer's token is above the readers' it followed.
    const tokenOf = (role: string) => BigInt(all.find((e) => e.role === role)!.token);
    for (const reader of all.filter((e) => e.role === 'reader')) expect(tokenOf('writer')).toBeGreaterThan(BigInt(reader.token));
    expect(tokenOf('late-reader')).toBeGreaterThan(tokenOf('writer'));
  }, 300_000);

  test('usage: -n with --shared, -n outside 1–1000 or not a whole number exit 2 and run nothing', async () => {
    const ran = path.join(dir, 'usage.log');
    const results = await Promise.all(
      [
        ['-n', '2', '--shared', 'jobs/x'],
        ['--shared', '--limit', '2', 'jobs/x'],
        ['-n', '0', 'jobs/x'],
        ['-n', '1001', 'jobs/x'],
        ['-n', '2.5', 'jobs/x'],
      ].map((args) => holdfast(server, ['lock', ...args, '--', 'sh', '-c', `echo ran >> ${ran}`])),
    );
    expect(results.map((r) => r.code)).toEqual([2, 2, 2, 2, 2]);
    expect(existsSync(ran)).toBe(false);
    const help = await holdfast(server, ['lock', '--help']);
    expect(help.stdout).toMatch(/-n, --limit <n>/);
    expect(help.stdout).toMatch(/--shared/);
  });
});
