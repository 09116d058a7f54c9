import { InvalidArgumentError, Option } from 'commander';
import { parseConsistency, type JobConsistency } from '@pserver/coordination';

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

/** `--consistency <mode>`, read as the master reads it. */
export function consistencyOption(): Option {
  return new Option(
    '--consistency <mode>',
    "the job's consistency mode: async (pushes applied on arrival), sync (synchronous steps) or ssp:<s> (bounded staleness s)",
  )
    .argParser((value: string): JobConsistency => {
      try {
        return parseConsistency(value);
      } catch (err) {
        throw new InvalidArgumentError((err as Error).message.replace(/^--consistency: /, ''));
      }
    })
    .default(parseConsistency('async'), 'async');
}
