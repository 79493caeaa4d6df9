/**
 * Debian's `redis-server` for the Redlock row: installed by the bench when missing (the same
 * apt-get steps as scripts/ensure-deps.sh), then one server of our own on a free loopback port,
 * persistence off, in a temporary directory, stopped (and the directory removed) at the end.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../../test/support/ports.js';

const BINARY = '/usr/bin/redis-server';
const READY_TIMEOUT_MILLIS = 30_000;
const STOP_GRACE_MILLIS = 5_000;

export interface RedisServer {
  port: number;
  pid: number;
  version: string;
  stop(): Promise<void>;
}

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal})`);
}

/** Installs Debian's redis-server when it is missing; returns the binary's path. */
export function ensureRedisServer(): string {
  if (existsSync(BINARY)) return BINARY;
  console.log('peers bench: installing Debian package redis-server (apt-get)…');
  const sudo = process.getuid?.() === 0 ? [] : ['sudo'];
  const apt = (...args: string[]) => (sudo.length > 0 ? run('sudo', ['apt-get', ...args]) : run('apt-get', args));
  apt('update', '-qq');
  apt('install', '-y', '-qq', '--no-install-recommends', 'redis-server');
  if (!existsSync(BINARY)) throw new Error(`apt-get installed redis-server but ${BINARY} is missing`);
  return BINARY;
}

/** One PING round trip; true on +PONG. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}

export async function startRedis(binary: string): Promise<RedisServer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-peers-redis-'));
  const port = await freePort();
  const version = spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const child = spawn(
    binary,
    [
      '--port', String(port),
      '--bind', '127.0.0.1',
      '--save', '', // no RDB snapshots
      '--appendonly', 'no', // no AOF: persistence off, as the bench's brief says
      '--dir', dir,
      '--logfile', path.join(dir, 'redis.log'),
      '--daemonize', 'no',
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MILLIS);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + READY_TIMEOUT_MILLIS;
  while (!(await ping(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server did not answer PING on 127.0.0.1:${port}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { port, pid: child.pid!, version, stop };
}
