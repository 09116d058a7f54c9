import { InvalidArgumentError } from 'commander';

/** A commander parser for flags that take a positive integer. */
export function positive(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new InvalidArgumentError(`expected a positive integer, got '${value}'`);
  return n;
}

/** A commander parser for flags that take a count, zero included. */
export function count(value: string): number {
  return value === '0' ? 0 : positive(value);
}
