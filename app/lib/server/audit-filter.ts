/**
 * Audit filtering by actor, action and key. The filters are sent to the server
 * (which may apply them) and applied again here, scanning a bounded number of
 * upstream pages so a rare match still fills a page without reading the whole trail.
 */
import type { AuditEntry } from '../api-types';

export interface AuditFilter {
  actor?: string;
  action?: string;
  target?: string;
}

/** Upstream pages scanned per console page when filters are set. */
export const MAX_SCANNED_PAGES = 10;
export const SCAN_PAGE_SIZE = 200;

export function hasFilter(filter: AuditFilter): boolean {
  return Boolean(filter.actor || filter.action || filter.target);
}

export function matches(entry: AuditEntry, filter: AuditFilter): boolean {
  if (filter.actor && entry.actor !== filter.actor) return false;
  if (filter.action && entry.action !== filter.action) return false;
  if (filter.target && entry.target !== filter.target) return false;
  return true;
}
