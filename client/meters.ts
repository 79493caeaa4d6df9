/**
 * The SDK's two meters (C4), named and labelled by contract/metric-table.ts.
 * They register on a prom-client Registry the application passes in — never
 * the global default registry and never the server's — and are silent when
 * no registry is given (then prom-client, an optional peer, is never
 * loaded). Attempt counts are observations, never label values.
 */
import type * as PromClient from 'prom-client';
import type { Counter, Histogram, Registry } from 'prom-client';
import { METRICS, type ClientAttemptOutcome } from '../contract/metric-table.js';
import type { BackendLabel } from './backend-label.js';
import { optionalPeer } from './optional-peer.js';
import type { MetricsRegistry } from './peer-types.js';

export interface SdkMeters {
  sessionLost(backend: BackendLabel): void;
  acquireAttempts(outcome: ClientAttemptOutcome, attempts: number): void;
}

export const SILENT_METERS: SdkMeters = {
  sessionLost: () => {},
  acquireAttempts: () => {},
};

export function createSdkMeters(appRegistry: MetricsRegistry | undefined): SdkMeters {
  if (appRegistry === undefined) return SILENT_METERS;
  // prom-client is an optional peer: loaded only now that the application handed over a registry.
  const prom = optionalPeer<typeof PromClient>('prom-client');
  if (prom === undefined) throw new Error('LockClient: `registry` was given but the prom-client package is not installed');
  const registry = appRegistry as unknown as Registry;
  const lost = METRICS.lockSessionLostTotal;
  const attempts = METRICS.lockClientAcquireAttempts;
  // Several LockClients may share one application registry: reuse what is there.
  const lostCounter =
    (registry.getSingleMetric(lost.name) as Counter<'backend'> | undefined) ??
    new prom.Counter({
      name: lost.name,
      help: lost.help,
      labelNames: Object.keys(lost.labels) as 'backend'[],
      registers: [registry],
    });
  const attemptsHistogram =
    (registry.getSingleMetric(attempts.name) as Histogram<'outcome'> | undefined) ??
    new prom.Histogram({
      name: attempts.name,
      help: attempts.help,
      labelNames: Object.keys(attempts.labels) as 'outcome'[],
      buckets: [...attempts.buckets],
      registers: [registry],
    });
  return {
    sessionLost: (backend) => lostCounter.inc({ backend }),
    acquireAttempts: (outcome, count) => attemptsHistogram.observe({ outcome }, count),
  };
}
