import { InvalidArgumentError } from 'commander';

/**
 * Value parsers for commander: a bad value throws `InvalidArgumentError`, which commander reports
 * with the flag (`option '--port <port>' argument '70000' is invalid. expected …`) and exits 1.
 */

/** Integers within [min, max], written in decimal digits only. */
export function integerParser(min: number, max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || n < min || n > max) {
      throw new InvalidArgumentError(`expected an integer from ${min} to ${max}, got '${value}'.`);
    }
    return n;
  };
}

/** A comma-separated list (e.g. etcd endpoints); blanks around items are dropped. */
export function parseList(value: string): string[] {
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  if (items.length === 0)
    throw new InvalidArgumentError(`expected a comma-separated list, got '${value}'.`);
  return items;
}
