/** Builders for raw etcd txn compares and operations (keys are full etcd keys, already prefixed). */
import { CompareResult, CompareTarget, type ICompare, type IKeyValue, type IRequestOp, type ITxnResponse } from 'etcd3';
import { prefixEnd } from './keys.js';

export const getOp = (key: Buffer): IRequestOp => ({ request_range: { key } });

export const putOp = (key: Buffer, value: Buffer, leaseId?: string): IRequestOp => ({
  request_put: leaseId === undefined ? { key, value } : { key, value, lease: leaseId },
});

export const rangeOp = (prefix: Buffer, keysOnly = false): IRequestOp => ({
  request_range: { key: prefix, range_end: prefixEnd(prefix), keys_only: keysOnly },
});

export const deleteOp = (key: Buffer, prevKv = true): IRequestOp => ({ request_delete_range: { key, prev_kv: prevKv } });

/** Absent keys compare with revision 0, so `createRevisionIs(key, '0')` means "key does not exist". */
export const createRevisionIs = (key: Buffer, revision: string): ICompare => ({
  key,
  target: CompareTarget.Create,
  result: CompareResult.Equal,
  create_revision: revision,
});

/** True also when the key is absent (revision 0), unless `revision` is '0'. */
export const createRevisionIsNot = (key: Buffer, revision: string): ICompare => ({
  key,
  target: CompareTarget.Create,
  result: CompareResult.NotEqual,
  create_revision: revision,
});

/** No key under `prefix` was created after `revision` (a range compare: newcomers fail it). */
export const nothingCreatedUnderAfter = (prefix: Buffer, revision: string): ICompare => ({
  key: prefix,
  range_end: prefixEnd(prefix),
  target: CompareTarget.Create,
  result: CompareResult.Less,
  create_revision: String(BigInt(revision) + 1n),
});

export const modRevisionIs = (key: Buffer, revision: string): ICompare => ({
  key,
  target: CompareTarget.Mod,
  result: CompareResult.Equal,
  mod_revision: revision,
});

export const prefixRange = (prefix: Buffer): { key: Buffer; range_end: Buffer } => ({ key: prefix, range_end: prefixEnd(prefix) });

/** The single key-value a range op at `index` of a txn response returned, if any. */
export function rangeResult(response: ITxnResponse, index: number): IKeyValue | undefined {
  return response.responses[index]?.response_range?.kvs[0];
}

/** Every key-value a range op at `index` of a txn response returned. */
export function rangeResults(response: ITxnResponse, index: number): IKeyValue[] {
  return response.responses[index]?.response_range?.kvs ?? [];
}

export function deletedResult(response: ITxnResponse, index: number): IKeyValue | undefined {
  return response.responses[index]?.response_delete_range?.prev_kvs[0];
}
