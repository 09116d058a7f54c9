import { type Command, Option } from 'commander';
import { integerParser, parseList } from './parsers';

/**
 * A flag table: every flag of a program written once, as data, with its name, unit, default,
 * help line and parser. Its environment variable is its name after the program's prefix
 * (`--lease-ttl-s` of `PSERVER` is `PSERVER_LEASE_TTL_S`); its key is the field of the typed
 * config it fills (`FlagValues`), so the config's type is derived from the table.
 */

/** What every flag states. */
interface FlagBase {
  /** Commander's spelling, with the value's name: `--port <port>`; a switch has no value. */
  readonly flags: string;
  /** The line `--help` shows. */
  readonly help: string;
  /** Left out of `--help` (flags for tests and supervisors). */
  readonly hidden?: boolean;
}

/** An integer within [min, max]; in `unit`, converted to the config's by its factor. */
export interface IntegerFlag extends FlagBase {
  readonly kind: 'integer';
  readonly min: number;
  readonly max: number;
  /** In the flag's unit, as `--help` shows it. */
  readonly default?: number;
  readonly unit?: Unit;
}

export interface TextFlag extends FlagBase {
  readonly kind: 'text';
  readonly default?: string;
}

/** A comma-separated list (etcd endpoints); blanks around items are dropped. */
export interface ListFlag extends FlagBase {
  readonly kind: 'list';
  readonly default?: readonly string[];
}

export interface ChoiceFlag<C extends string = string> extends FlagBase {
  readonly kind: 'choice';
  readonly choices: readonly C[];
  readonly default?: C;
}

/** On when given (or its variable is set, to anything); off otherwise. */
export interface SwitchFlag extends FlagBase {
  readonly kind: 'switch';
}

/** A value of its own syntax; `parse` throws commander's `InvalidArgumentError` on a bad one. */
export interface ParsedFlag<T = unknown> extends FlagBase {
  readonly kind: 'parsed';
  readonly parse: (text: string) => T;
  readonly default?: T;
}

export type Flag = IntegerFlag | TextFlag | ListFlag | ChoiceFlag | SwitchFlag | ParsedFlag;

/** A program's flags by the config field each fills, in the order `--help` lists them. */
export type FlagTable = Readonly<Record<string, Flag>>;

/**
 * The unit a number is written in on the command line, and `factor`, what one of it is in the
 * unit of the config field it fills (`--checkpoint-interval-s` fills `checkpointIntervalMs`).
 */
export interface Unit {
  /** As the flag's value is named: `--lease-ttl-s <s>`. */
  readonly name: string;
  readonly factor: number;
}

export const units = {
  ms: { name: 'ms', factor: 1 },
  seconds: { name: 's', factor: 1 },
  secondsAsMs: { name: 's', factor: 1_000 },
  hoursAsMs: { name: 'hours', factor: 3_600_000 },
  mibAsBytes: { name: 'MiB', factor: 1024 * 1024 },
  percent: { name: 'percent', factor: 1 },
  elements: { name: 'elements', factor: 1 },
} as const satisfies Record<string, Unit>;

/** Declares a table; `const` keeps each flag's kind, choices and default in its type. */
export function flagTable<const T extends FlagTable>(table: T): T {
  return table;
}

/**
 * A flag several programs take, before each gives it what it says there: its help line when the
 * flag means more in one than in another, and a default when theirs differ. A program's table
 * spreads it and adds those (`{ ...sharedFlags.port, default: 8100 }`); a table whose flag still
 * lacks its help line does not compile.
 */
export type SharedFlag = Flag extends infer F
  ? F extends Flag
    ? Omit<F, 'help'> & { readonly help?: string }
    : never
  : never;

/** Declares shared flags, as `flagTable` does. */
export function sharedFlagTable<const T extends Readonly<Record<string, SharedFlag>>>(table: T): T {
  return table;
}

type Parsed<F> = F extends IntegerFlag
  ? number
  : F extends TextFlag
    ? string
    : F extends ListFlag
      ? string[]
      : F extends ChoiceFlag<infer C>
        ? C
        : F extends ParsedFlag<infer T>
          ? T
          : never;

/** A flag's value in the config: a switch is a boolean; without a default, maybe undefined. */
export type FlagValue<F extends Flag> = F extends SwitchFlag
  ? boolean
  : F extends { readonly default: infer D }
    ? undefined extends D
      ? Parsed<F> | undefined
      : Parsed<F>
    : Parsed<F> | undefined;

/** The values a table's flags give, by key: the typed config, or its part that flags fill. */
export type FlagValues<T extends FlagTable> = { -readonly [K in keyof T]: FlagValue<T[K]> };

/** The long name of a flag: `--lease-ttl-s`. */
export function flagName(flag: Flag): string {
  const name = /--[a-z0-9-]+/.exec(flag.flags)?.[0];
  if (name === undefined) throw new Error(`flag '${flag.flags}' has no long name`);
  return name;
}

/** The environment variable behind a flag: `PSERVER` and `--lease-ttl-s` make `PSERVER_LEASE_TTL_S`. */
export function flagEnv(flag: Flag, envPrefix: string): string {
  return `${envPrefix}_${flagName(flag).slice(2).toUpperCase().replaceAll('-', '_')}`;
}

/** The commander option of a flag; its variable's prefix is the program's (`PSERVER`). */
export function flagOption(flag: Flag, envPrefix: string): Option {
  // The value's name is all `--help` says of a unit, so it must be the unit's.
  if (flag.kind === 'integer' && flag.unit && !flag.flags.endsWith(` <${flag.unit.name}>`))
    throw new Error(
      `flag '${flag.flags}' is in ${flag.unit.name}: name its value <${flag.unit.name}>`,
    );
  const option = new Option(flag.flags, flag.help).env(flagEnv(flag, envPrefix));
  switch (flag.kind) {
    case 'integer':
      option.argParser(integerParser(flag.min, flag.max));
      break;
    case 'list':
      option.argParser(parseList);
      break;
    case 'choice':
      option.choices(flag.choices);
      break;
    case 'parsed':
      option.argParser(flag.parse);
      break;
    case 'text':
    case 'switch':
      break;
  }
  // A switch's default stays out of commander, which would print `default: false`.
  if (flag.kind !== 'switch' && flag.default !== undefined) option.default(flag.default);
  if (flag.hidden === true) option.hideHelp();
  return option;
}

/** Adds the flags of each table to a program, in order. */
export function addFlags(program: Command, envPrefix: string, ...tables: FlagTable[]): Command {
  for (const table of tables)
    for (const flag of Object.values(table)) program.addOption(flagOption(flag, envPrefix));
  return program;
}

/** After `program.parse`: a table's values, by key, converted to the config's units. */
export function flagValues<T extends FlagTable>(program: Command, table: T): FlagValues<T> {
  const given = program.opts();
  const values = Object.entries(table).map(([key, flag]) => {
    const value: unknown = given[new Option(flag.flags).attributeName()];
    return [key, configValue(flag, value)] as const;
  });
  return Object.fromEntries(values) as FlagValues<T>;
}

function configValue(flag: Flag, value: unknown): unknown {
  switch (flag.kind) {
    case 'switch':
      return value === true;
    case 'integer':
      return typeof value === 'number' ? value * (flag.unit?.factor ?? 1) : undefined;
    case 'list':
      // A copy: the table's default is shared by every parse.
      return Array.isArray(value) ? [...(value as string[])] : undefined;
    default:
      return value;
  }
}
