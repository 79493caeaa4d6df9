/**
 * Wire types of the insight routes (C3: A7 contention, per-key history, waits),
 * as the console reads them. Written out here, not imported from lock/, so no
 * server code reaches the console bundle.
 */
import type { AuditEntry } from './api-types';

export interface ContendedKey {
  key: string;
  contended: number;
  waiters: number;
  holderSessionId?: string;
  holderOwner?: string;
}

export interface ContentionTop {
  windowMillis: number;
  items: ContendedKey[];
}

export type LockHistoryKind = 'granted' | 'released' | 'expired' | 'revoked' | 'session_ended';

export interface LockHistoryEvent {
  at: number;
  kind: LockHistoryKind;
  key: string;
  sessionId: string;
  owner?: string;
  fencingToken: string;
  heldMillis?: number;
  actor?: string;
  reason?: string;
  cause?: string;
  auditId?: string;
}

export interface LockHistory {
  key: string;
  items: LockHistoryEvent[];
  audit: AuditEntry[];
}

export interface WaitEdge {
  waiterSessionId: string;
  key: string;
  holderSessionId: string | null;
}

export interface WaitGraph {
  scope: 'instance';
  items: WaitEdge[];
  cycles: string[][];
}
