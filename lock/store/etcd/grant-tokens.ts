/**
 * Fencing tokens on etcd: revision × 1000 + slot.
 *
 * Concurrent acquires share one etcd txn (acquire-batcher.ts), and every key a
 * txn creates gets the txn's revision as its create revision. The revision alone
 * would hand one token to several grants; the spec wants tokens strictly
 * increasing across every grant, whatever the key. So each grant in a txn has a
 * slot (its position in the batch, 0 for a txn of one), stored in the lock's
 * value, and its token is create revision × 1000 + slot: grants of a later txn
 * carry higher tokens than every grant of an earlier one, and grants of one txn
 * increase in request order. The revision part still names exactly one
 * incarnation of the key (a key is created at most once per revision), so every
 * compare that pins a grant compares the create revision, and a blind
 * compare-and-delete also compares the slot (slotIs below).
 *
 * Records written before slots existed (no slot in the value) keep their bare
 * revision as token; those are all below any slotted token.
 */
import { CompareResult, CompareTarget, type ICompare } from 'etcd3';
import { isFencingToken } from '../../../contract/wire-rules.js';

/** Slots per revision; a batch holds fewer grants than this (acquire-batcher.ts MAX_BATCH). */
export const SLOTS_PER_REVISION = 1000;
const SLOTS = BigInt(SLOTS_PER_REVISION);
const SLOT_DIGITS = String(SLOTS_PER_REVISION - 1).length;

/** A slot as stored: fixed width, so a value compare can bracket it (slotIs). */
export function storedSlot(slot: number): string {
  if (!Number.isInteger(slot) || slot < 0 || slot >= SLOTS_PER_REVISION) throw new Error(`grant slot out of range: ${slot}`);
  return String(slot).padStart(SLOT_DIGITS, '0');
}

/** The token of the grant created at `revision` in slot `slot` (a stored slot); bare revision when unslotted. */
export function grantToken(revision: string, slot: string | undefined): string {
  if (slot === undefined) return revision;
  return (BigInt(revision) * SLOTS + BigInt(slot)).toString();
}

/** The create revision and stored slot a token names; null for something that is no token of this store. */
export function tokenParts(token: string): { revision: string; slot: string } | null {
  if (!isFencingToken(token) || token === '0') return null;
  const value = BigInt(token);
  return { revision: (value / SLOTS).toString(), slot: storedSlot(Number(value % SLOTS)) };
}

/** How a slotted lock value begins (records.ts writes the slot first, exactly so). */
export function slotPrefix(slot: string): string {
  return `{"slot":"${slot}"`;
}

/**
 * The value at `key` was written with slot `slot`: it begins `{"slot":"NNN",`,
 * i.e. it sorts above the bare prefix and below the prefix followed by "-" (the
 * byte after ","). Two compares, because etcd compares whole values only.
 */
export function slotIs(key: Buffer, slot: string): ICompare[] {
  const prefix = slotPrefix(slot);
  return [
    { key, target: CompareTarget.Value, result: CompareResult.Greater, value: Buffer.from(prefix) },
    { key, target: CompareTarget.Value, result: CompareResult.Less, value: Buffer.from(`${prefix}-`) },
  ];
}
