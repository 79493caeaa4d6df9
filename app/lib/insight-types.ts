/**
 * Wire types of the insight routes (C3: A7 contention, per-key history, waits),
 * imported as types only from the contract leaf, so no server code reaches the
 * console bundle.
 */
export type {
  BrokenDeadlock,
  ContendedKey,
  ContentionTop,
  KeyHistory as LockHistory,
  LockHistoryEvent,
  LockHistoryKind,
  WaitEdge,
  WaitGraph,
} from '../../contract/insight';
