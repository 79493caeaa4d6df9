/**
 * Server env for tests that are not about store timeouts: the deadlines that turn a
 * slow store answer into 503 NOT_LEADER (right for a black-holed PostgreSQL) set far
 * above anything a busy machine takes, so slowness is never mistaken for an outage.
 * Tests of the timeouts themselves (test/fault/postgres-*.test.ts) keep the defaults.
 * A key this branch's config does not know is dropped by loadConfig, so
 * HOLDFAST_STORE_TIMEOUT_MS (core's store-health deadline, 1 s by default, coming
 * from main) is set here ahead of it.
 */
export const PATIENT_STORE_ENV: Record<string, string> = {
  HOLDFAST_PG_CONNECT_TIMEOUT_MS: '30000',
  HOLDFAST_PG_STATEMENT_TIMEOUT_MS: '30000',
  HOLDFAST_STORE_TIMEOUT_MS: '30000',
};
