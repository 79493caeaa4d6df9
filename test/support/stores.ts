import type { StoreName } from './server.js';

/**
 * The stores the HTTP black-box suite runs against: one suite, parameterised.
 * HOLDFAST_TEST_STORES narrows it (e.g. "embedded" for a quick local run).
 */
export const STORES: StoreName[] = (process.env.HOLDFAST_TEST_STORES?.split(',') as StoreName[] | undefined) ?? [
  'embedded',
  'postgres',
  'etcd',
];
