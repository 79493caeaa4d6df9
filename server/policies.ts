/**
 * The composition root's part of per-prefix policies (SPEC v3 "teams"): open the policies file,
 * hand the core a reader of the policies in force, ask the store for its figures split by them,
 * and log reloads. The rules themselves live in contract/policies.ts (which policy a key is under)
 * and lock/core (what a policy refuses).
 */
import type { LockPolicy } from '../contract/policies.js';
import type { EventLog } from '../exporter/events.js';
import type { LockService } from '../lock/core/lock-service.js';
import { PolicyBook, type PolicyReload } from '../lock/policy-book.js';
import type { StoreSummary } from '../lock/store/spi.js';

/** The file's policies, re-read on change; none without a file. Throws, naming the line, on a bad file. */
export function openPolicies(file: string | undefined, onReload: (reload: PolicyReload) => void): PolicyBook {
  return file === undefined ? PolicyBook.none() : PolicyBook.open(file, { onReload });
}

/**
 * The core's option: it reads the policies in force on each request, so an edit applies to the next one.
 * Typed here rather than taken from LockServiceOptions so this root compiles before the core names it.
 */
export function policyOptions(book: PolicyBook): { policies: () => readonly LockPolicy[] } {
  return { policies: () => book.current() };
}

type SummaryQuery = { policies?: readonly LockPolicy[] };

/** The store's summary, with its per-policy rows for the policies in force now. */
export function summaryByPolicy(service: LockService, book: PolicyBook): Promise<StoreSummary> {
  const summary = service.storeSummary as (this: LockService, query?: SummaryQuery) => Promise<StoreSummary>;
  return summary.call(service, { policies: book.current() });
}

export function logPolicyReload(events: EventLog, reload: PolicyReload): void {
  const ctx = { requestId: 'policies' };
  if (reload.outcome === 'loaded') events.emit('policies_loaded', ctx, { file: reload.file, policies: reload.policies.length });
  else events.emit('policies_rejected', ctx, { file: reload.file, message: reload.message });
}
