import { Option } from 'commander';
import { integerParser, parseList } from './parsers';

/**
 * Single options for commands that have no flag table (pserverctl, the checkpoint tool): the
 * same parsers as the tables', with the variable named in full.
 */

/** An integer flag within [min, max]. */
export function integerOption(
  flags: string,
  description: string,
  env: string,
  defaultValue: number | undefined,
  min: number,
  max: number,
): Option {
  const option = new Option(flags, description).env(env).argParser(integerParser(min, max));
  return defaultValue === undefined ? option : option.default(defaultValue);
}

/** A comma-separated list flag (e.g. etcd endpoints). */
export function listOption(flags: string, description: string, env: string): Option {
  return new Option(flags, description).env(env).argParser(parseList);
}
