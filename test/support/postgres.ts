/**
 * A real, throwaway PostgreSQL 15 cluster on a free loopback port. initdb
 * refuses root, so as root the cluster is owned and run by `postgres`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './ports.js';

const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface PostgresCluster {
  url: string;
  port: number;
  dataDir: string;
  /** A fresh empty database in this cluster. */
  createDatabase(): Promise<string>;
  /** Runs SQL as the superuser against one database. */
  sql(databaseUrl: string, statement: string, params?: unknown[]): Promise<pg.QueryResult>;
  stop(): Promise<void>;
}

let databases = 0;

/** A handle on a cluster someone else started and will stop (the vitest global setup's). */
export function attachPostgres(url: string): PostgresCluster {
  const port = Number(new URL(url).port);
  return { url, port, dataDir: '', createDatabase: () => createDatabase(url, port), sql: runSql, stop: async () => {} };
}

async function runSql(databaseUrl: string, statement: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await client.query(statement, params);
  } finally {
    await client.end();
  }
}

async function createDatabase(adminUrl: string, port: number): Promise<string> {
  const name = `holdfast_${process.pid}_${++databases}_${Date.now().toString(36)}`;
  await runSql(adminUrl, `CREATE DATABASE ${name}`);
  return `postgres://postgres@127.0.0.1:${port}/${name}`;
}

/** Runs a PostgreSQL program (initdb, pg_ctl) as the cluster's owner: `postgres` when we are root. */
export function runPgProgram(cmd: string, args: string[]): void {
  const asRoot = process.getuid?.() === 0;
  const result = asRoot
    ? spawnSync('runuser', ['-u', 'postgres', '--', path.join(BIN, cmd), ...args], { encoding: 'utf8' })
    : spawnSync(path.join(BIN, cmd), args, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${cmd} failed: ${result.stderr || result.stdout}`);
}

export interface StartPostgresOptions {
  /**
   * Tests run with fsync off (a throwaway cluster need not survive a power cut, and a shared disk
   * would make every test pay for its latency); a bench comparing durable systems turns it on.
   */
  fsync?: boolean;
  /** Extra server settings (`-c name=value`), e.g. a bench's pg_stat_statements. */
  settings?: Readonly<Record<string, string>>;
}

/** pg_ctl start arguments for a cluster of startPostgres() (also to start it again after a stop). */
export function pgStartArgs(dataDir: string, port: number, options: StartPostgresOptions = {}): string[] {
  return [
    '-D', dataDir, '-l', path.join(dataDir, 'log'), '-w', '-o',
    `-p ${port} -c listen_addresses=127.0.0.1 -k ${dataDir}${options.fsync ? '' : ' -c fsync=off'} -c max_connections=300` +
      Object.entries(options.settings ?? {}).map(([name, value]) => ` -c ${name}=${value}`).join(''),
    'start',
  ];
}

export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresCluster> {
  const root = mkdtempSync(path.join(tmpdir(), 'holdfast-pg-'));
  chmodSync(root, 0o755);
  const dataDir = path.join(root, 'data');
  const port = await freePort();
  const asRoot = process.getuid?.() === 0;
  const run = runPgProgram;
  if (asRoot) execFileSync('install', ['-d', '-o', 'postgres', '-g', 'postgres', '-m', '700', dataDir]);
  run('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale', '-N']);
  run('pg_ctl', pgStartArgs(dataDir, port, options));
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    port,
    dataDir,
    createDatabase: () => createDatabase(url, port),
    sql: runSql,
    async stop() {
      try {
        run('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  };
}
