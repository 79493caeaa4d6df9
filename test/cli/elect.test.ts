/**
 * `holdfast elect NAME -- CMD` and `holdfast observe NAME`, run as the package's bin against a
 * real server (issue 23): three elect processes campaign at a time (a replacement is started
 * whenever one ends); CMD logs start and end with a wall-clock timestamp, its
 * HOLDFAST_FENCING_TOKEN and its parent (the elect process). Each round ends the leader a
 * different way — CMD finishes, SIGTERM to holdfast (passed to CMD), SIGKILL of holdfast and CMD
 * together — and the next leader must start only after the last one ended, with a higher token.
 * `holdfast observe -o json` running throughout prints one line per leader, in term order.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually, httpClient } from '../support/http.js';
import { BIN } from '../support/server-process.js';
import { startServer, type TestServer } from '../support/server.js';
import { startCli, type CliResult } from './run-cli.js';

type Ending = 'finish' | 'sigterm' | 'sigkill';
/** How each leader ends, in turn; three processes campaign until the last three (no replacement after the third). */
const ENDINGS: Ending[] = ['finish', 'sigterm', 'sigkill', 'finish', 'sigterm', 'finish'];
const REPLACED = 3;
/**
 * 10 s, not less: a leader must keep its leadership until the test ends it (a lost one exits 4, not
 * 0 or 143). The SDK renews every TTL/3 and vouches for the grant until send time + TTL −
 * min(1 s, TTL/4): at 10 s a renewal has 9 − 3.33 = 5.67 s (abandoned after 2.5 s, sent again at
 * once); at 3 s it had 1.25 s, each try abandoned after 625 ms, too little on a loaded 2-core CI
 * machine. The cost: the SIGKILL round waits out the killed grant, up to 10 s.
 */
const LEADERSHIP_TTL_MILLIS = 10_000;

interface ElectProcess {
  child: ChildProcess;
  done: Promise<CliResult>;
}

describe('holdfast elect and observe', () => {
  let server: TestServer;
  let dir: string;
  const running: ElectProcess[] = [];

  beforeAll(async () => {
    server = await startServer({ store: 'postgres' });
    dir = mkdtempSync(path.join(tmpdir(), 'holdfast-elect-cli-'));
  });
  afterAll(async () => {
    for (const { child } of running) if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('CMD runs on exactly one of three processes at a time, with rising tokens over three successions; observe prints each leader once', async () => {
    const name = 'jobs/leader';
    const log = path.join(dir, 'elect.log');
    // start/end TOKEN NANOS PARENT; SIGTERM (passed on by holdfast) logs the end too, then exits 143.
    const job = [
      'T=$HOLDFAST_FENCING_TOKEN',
      `echo "start $T $(date +%s%N) $PPID" >> ${log}`,
      `trap 'echo "end $T $(date +%s%N) $PPID" >> ${log}; exit 143' TERM`,
      `while [ ! -e ${dir}/end.$T ]; do sleep 0.05; done`,
      `echo "end $T $(date +%s%N) $PPID" >> ${log}`,
    ].join('; ');
    const lines = () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : []);
    const parsed = () => lines().map((line) => line.split(' ') as ['start' | 'end', string, string, string]);

    // Its own process group, so a SIGKILL of the group takes holdfast and CMD together.
    const elect = (): ElectProcess => {
      const child = spawn(process.execPath, [BIN, 'elect', name, '--ttl', String(LEADERSHIP_TTL_MILLIS), '--grace', '1000', '--', 'sh', '-c', job], {
        env: { ...process.env, HOLDFAST_URL: server.url, HOLDFAST_TOKEN: server.operatorToken, HOLDFAST_DATA_DIR: '/nonexistent' },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (chunk) => (stdout += chunk));
      child.stderr!.on('data', (chunk) => (stderr += chunk));
      const done = new Promise<CliResult>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
      const started = { child, done };
      running.push(started);
      return started;
    };

    // The observer first: its first line is the free key, before anyone campaigns.
    const observer = startCli(server, ['-o', 'json', 'observe', name]);
    await eventually(async () => observer.stdout().includes('"leader":null'), 60_000);
    for (let i = 0; i < 3; i += 1) elect();

    const leaders: { token: string; pid: number; endedAt?: bigint }[] = [];
    for (const [round, ending] of ENDINGS.entries()) {
      await eventually(async () => parsed().filter(([what]) => what === 'start').length === round + 1, 60_000);
      const [, token, , parent] = parsed().filter(([what]) => what === 'start')[round]!;
      const leader = running.find(({ child }) => child.pid === Number(parent));
      expect(leader, `round ${round}: CMD's parent ${parent} is one of the elect processes`).toBeDefined();
      leaders.push({ token, pid: Number(parent) });
      // Ended once observe has printed it: L8 cannot park on a free key (C3 as pinned), so a leader
      // elected out of a free key and gone within observe's free-key poll pause could pass unseen.
      await eventually(async () => observer.stdout().includes(`"term":"${token}"`), 30_000);
      if (ending === 'finish') writeFileSync(path.join(dir, `end.${token}`), '');
      else if (ending === 'sigterm') leader!.child.kill('SIGTERM');
      else {
        leaders.at(-1)!.endedAt = BigInt(Date.now()) * 1_000_000n;
        process.kill(-leader!.child.pid!, 'SIGKILL');
      }
      const result = await leader!.done;
      if (ending === 'finish') expect(result.code, result.stderr).toBe(0);
      if (ending === 'sigterm') expect(result.code, result.stderr).toBe(143);
      if (ending === 'sigkill') expect(result.signal).toBe('SIGKILL');
      // Three campaign at a time, until the last three lead in turn.
      if (round < REPLACED) elect();
    }
    expect(running.every(({ child }) => child.exitCode !== null || child.signalCode !== null)).toBe(true);
    const admin = httpClient(server.url).admin(server.operatorToken);
    const sessions = (await admin.listSessions()).body.items as { owner: string }[];
    expect(sessions.filter((s) => s.owner.startsWith('holdfast elect ')).length).toBeLessThanOrEqual(1); // the SIGKILLed one's, until its TTL

    // One at a time: start, end, start, end … (the SIGKILLed CMD wrote no end: the kill is its end).
    const events = parsed();
    const timeline: { what: 'start' | 'end'; token: string; at: bigint }[] = events.map(([what, token, nanos]) => ({ what, token, at: BigInt(nanos) }));
    for (const leader of leaders.filter((l) => l.endedAt !== undefined)) {
      const startIndex = timeline.findIndex((e) => e.what === 'start' && e.token === leader.token);
      timeline.splice(startIndex + 1, 0, { what: 'end', token: leader.token, at: leader.endedAt! });
    }
    expect(timeline.map((e) => e.what)).toEqual(leaders.flatMap(() => ['start', 'end']));
    for (let i = 0; i < timeline.length; i += 2) {
      expect(timeline[i]!.token).toBe(timeline[i + 1]!.token);
      if (i > 0) expect(timeline[i]!.at, `leader ${i / 2} started after the one before ended`).toBeGreaterThan(timeline[i - 1]!.at);
    }
    const tokens = leaders.map((l) => BigInt(l.token));
    for (let i = 1; i < tokens.length; i += 1) expect(tokens[i]!).toBeGreaterThan(tokens[i - 1]!);
    expect(new Set(leaders.map((l) => l.pid)).size).toBe(leaders.length);

    // observe: one line per change; its leaders are these, each once, in term order.
    await eventually(async () => observer.stdout().includes(`"term":"${leaders.at(-1)!.token}"`), 30_000);
    observer.child.kill('SIGTERM');
    const observed = await observer.done;
    expect(observed.code, observed.stderr).toBe(0);
    const items = observed.stdout.trim().split('\n').map((line) => JSON.parse(line) as { at: string; leader: { term: string; owner: string } | null });
    expect(items.flatMap((item) => (item.leader === null ? [] : [item.leader.term]))).toEqual(leaders.map((l) => l.token));
    for (const item of items) if (item.leader) expect(item.leader.owner).toMatch(/^holdfast elect .+ pid \d+$/);
  }, 300_000);

  test('elect: SIGTERM while campaigning ends the campaign (exit 143), CMD never runs, the session is closed', async () => {
    const log = path.join(dir, 'never.log');
    const api = httpClient(server.url);
    const sessionId = (await api.openSession({ owner: 'elect-holder' })).body.sessionId as string;
    expect((await api.acquire('jobs/held-leader', { sessionId })).status).toBe(200);
    const waiting = startCli(server, ['elect', 'jobs/held-leader', '--', 'sh', '-c', `echo ran >> ${log}`]);
    await eventually(async () => (await api.read('jobs/held-leader')).body.waiterCount >= 1, 60_000);
    waiting.child.kill('SIGTERM');
    const result = await waiting.done;
    expect(result.code, result.stderr).toBe(143);
    expect(result.stderr).toContain('while campaigning');
    expect(existsSync(log)).toBe(false);
    const sessions = (await api.admin(server.operatorToken).listSessions()).body.items as { owner: string }[];
    expect(sessions.filter((s) => s.owner.endsWith(` pid ${waiting.child.pid}`))).toEqual([]);
  });

  test('elect: usage errors exit 2; --help names the command and its exit codes', async () => {
    const missing = await startCli(server, ['elect', 'jobs/x']).done;
    expect(missing.code).toBe(2);
    const badTtl = await startCli(server, ['elect', 'jobs/x', '--ttl', 'soon', '--', 'true']).done;
    expect(badTtl.code).toBe(2);
    const help = await startCli(server, ['--help']).done;
    expect(help.stdout).toMatch(/elect \[options\] <name> <command\.\.\.>/);
    expect(help.stdout).toMatch(/observe <name>/);
    const electHelp = await startCli(server, ['elect', '--help']).done;
    expect(electHelp.stdout).toContain('HOLDFAST_FENCING_TOKEN');
    expect(electHelp.stdout).toContain('4 leadership was lost');
  });
});
