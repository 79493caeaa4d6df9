/**
 * One throwaway PostgreSQL cluster for the whole vitest run (each server gets
 * its own database in it), stopped when the run ends — also when test files
 * time out, which process-exit hooks in workers cannot promise.
 */
import { startPostgres, type PostgresCluster } from './postgres.js';

let cluster: PostgresCluster | undefined;

export async function setup(): Promise<void> {
  cluster = await startPostgres();
  process.env.HOLDFAST_TEST_PG_URL = cluster.url;
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
}
