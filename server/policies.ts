/**
 * The composition root's part of per-prefix policies (SPEC v3 "teams"): open the policies file and
 * log its reloads. The core reads the policies in force from the book on each decision; the rules
 * live in contract/policies.ts (which policy a key is under) and lock/core (what a policy refuses).
 */
import type { EventLog } from '../exporter/events.js';
import { PolicyBook, type PolicyReload } from '../lock/policy-book.js';

/** The file's policies, re-read on change; none without a file. Throws, naming the line, on a bad file. */
export function openPolicies(file: string | undefined, onReload: (reload: PolicyReload) => void): PolicyBook {
  return file === undefined ? PolicyBook.none() : PolicyBook.open(file, { onReload });
}

export function logPolicyReload(events: EventLog, reload: PolicyReload): void {
  const ctx = { requestId: 'policies' };
  if (reload.outcome === 'loaded') events.emit('policies_loaded', ctx, { file: reload.file, policies: reload.policies.length });
  else events.emit('policies_rejected', ctx, { file: reload.file, message: reload.message });
}
