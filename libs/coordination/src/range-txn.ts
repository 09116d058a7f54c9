import {
  CompareResult,
  CompareTarget,
  type Etcd3,
  type ICompare,
  type IOperation,
  type ITxnResponse,
} from 'etcd3';

/**
 * Transactions whose compares may cover a whole prefix, which etcd3's `if(…)` builder cannot
 * say. etcd refuses a transaction of more than `--max-txn-ops` compares (128 by default), so a
 * condition on every index of a job goes on its prefix: etcd checks each key in the range, and
 * an empty range compares as one key with every field 0 (so `Create == 0` means "no key").
 */
export type Compare = ICompare;

type Target = 'Create' | 'Mod' | 'Value';
type Result = '==' | '<' | '>';

const results: Record<Result, CompareResult> = {
  '==': CompareResult.Equal,
  '<': CompareResult.Less,
  '>': CompareResult.Greater,
};
const fields: Record<Target, keyof ICompare> = {
  Create: 'create_revision',
  Mod: 'mod_revision',
  Value: 'value',
};

/** A compare of one key's field. */
export function onKey(
  key: string,
  target: Target,
  result: Result,
  value: number | string,
): Compare {
  return {
    key: Buffer.from(key),
    target: CompareTarget[target],
    result: results[result],
    [fields[target]]: target === 'Value' ? Buffer.from(String(value)) : value,
  };
}

/** A compare that every key under `prefix` must pass (an empty prefix passes as all zeros). */
export function onPrefix(
  prefix: string,
  target: 'Create' | 'Mod',
  result: Result,
  value: number,
): Compare {
  return { ...onKey(prefix, target, result, value), range_end: prefixEnd(prefix) };
}

/** Runs `operations` (etcd3 put and delete builders) when every compare holds. */
export async function rangeTxn(
  client: Etcd3,
  compare: Compare[],
  operations: IOperation[],
): Promise<ITxnResponse> {
  return client.kv.txn({
    compare,
    success: await Promise.all(operations.map((op) => op.op())),
    failure: [],
  });
}

/** The end of the range of keys that start with `prefix`: its last byte plus one. */
function prefixEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i] = end[i]! + 1;
      return end.subarray(0, i + 1);
    }
  }
  throw new Error(`no key range after the prefix ${JSON.stringify(prefix)}`);
}
