/**
 * The C3 records and wire rules the SDK reads, re-exported from contract/ (the
 * one definition, bundled into @holdfast/client by tsup), so the SDK depends on
 * the HTTP contract only, never on the server's modules. Field names are pinned
 * in docs/contracts/C3-http.md. Types come from contract/records.ts as
 * interfaces (no schema library in the SDK's declarations); values from
 * contract/wire-rules.ts and contract/error-table.ts, which import nothing.
 */
export type {
  FencingToken,
  HeartbeatAck,
  LockGrant,
  LockHolder,
  LockInfo,
  LockMode,
  LockReleased as Released,
  SessionOpened,
} from '../contract/records.js';
export type { ErrorCode as WireErrorCode } from '../contract/error-table.js';
export { ERROR_CODE, ERROR_TABLE } from '../contract/error-table.js';
export { KEY_BYTES, LOCK_LIMIT, LOCK_TTL_MILLIS, MAX_LOCK_VALUE_BYTES, WAIT_MILLIS, WATCH_MILLIS, checkLockKey, compareFencingTokens, highestHolderToken, isFencingToken } from '../contract/wire-rules.js';
