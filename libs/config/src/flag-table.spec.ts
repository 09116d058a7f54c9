import { Command, InvalidArgumentError } from 'commander';
import {
  addFlags,
  flagEnv,
  flagOption,
  flagTable,
  flagValues,
  units,
  type FlagValues,
} from './flag-table';
import { logFlags, logSettings } from './log-flags';

const table = flagTable({
  leaseTtlSeconds: {
    kind: 'integer',
    flags: '--lease-ttl-s <s>',
    help: 'lease TTL',
    min: 1,
    max: 600,
    default: 5,
    unit: units.seconds,
  },
  intervalMs: {
    kind: 'integer',
    flags: '--interval-s <s>',
    help: 'seconds between runs',
    min: 0,
    max: 60,
    default: 2,
    unit: units.secondsAsMs,
  },
  metricsPort: { kind: 'integer', flags: '--metrics-port <port>', help: 'metrics', min: 0, max: 9 },
  job: { kind: 'text', flags: '--job <name>', help: 'the job', default: 'default' },
  endpoints: {
    kind: 'list',
    flags: '--endpoints <urls>',
    help: 'etcd',
    default: ['http://127.0.0.1:2379'],
  },
  dataPath: {
    kind: 'choice',
    flags: '--data-path <server>',
    help: 'who serves',
    choices: ['direct', 'grpc-js'],
    default: 'direct',
  },
  fresh: { kind: 'switch', flags: '--allow-fresh-start', help: 'start empty' },
  point: {
    kind: 'parsed',
    flags: '--point <name:action>',
    help: 'testing only',
    parse: parsePoint,
    hidden: true,
  },
});

function parsePoint(text: string): { name: string; action: string } {
  const [name, action] = text.split(':');
  if (!name || !action) throw new InvalidArgumentError(`expected <name>:<action>, got '${text}'.`);
  return { name, action };
}

function program(): Command {
  return addFlags(
    new Command('test').exitOverride().configureOutput({ writeErr: () => undefined }),
    'TEST',
    table,
    logFlags,
  );
}

/** The table's values from these arguments and `TEST_*` variables (restored afterwards). */
function parse(args: string[], env: Record<string, string> = {}): FlagValues<typeof table> {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    return flagValues(program().parse(args, { from: 'user' }), table);
  } finally {
    for (const name of Object.keys(env)) delete process.env[name];
    Object.assign(process.env, saved);
  }
}

describe('a flag table', () => {
  it('gives each default, in the config unit, and undefined where there is none', () => {
    expect(parse([])).toEqual({
      leaseTtlSeconds: 5,
      intervalMs: 2_000,
      metricsPort: undefined,
      job: 'default',
      endpoints: ['http://127.0.0.1:2379'],
      dataPath: 'direct',
      fresh: false,
      point: undefined,
    });
  });

  it('reads each flag, converting units', () => {
    expect(
      parse([
        '--lease-ttl-s=9',
        '--interval-s=0',
        '--metrics-port=3',
        '--job=mnist',
        '--endpoints=http://a:1, http://b:2',
        '--data-path=grpc-js',
        '--allow-fresh-start',
        '--point=after-recovery:stop',
      ]),
    ).toEqual({
      leaseTtlSeconds: 9,
      intervalMs: 0,
      metricsPort: 3,
      job: 'mnist',
      endpoints: ['http://a:1', 'http://b:2'],
      dataPath: 'grpc-js',
      fresh: true,
      point: { name: 'after-recovery', action: 'stop' },
    });
  });

  it('reads each variable, named after the flag, and the flag wins over it', () => {
    const env = {
      TEST_LEASE_TTL_S: '600',
      TEST_INTERVAL_S: '60',
      TEST_METRICS_PORT: '0',
      TEST_JOB: 'env-job',
      TEST_ENDPOINTS: 'http://c:3',
      TEST_DATA_PATH: 'grpc-js',
      TEST_ALLOW_FRESH_START: '1',
      TEST_POINT: 'forward:stall',
    };
    expect(Object.values(table).map((flag) => flagEnv(flag, 'TEST'))).toEqual(Object.keys(env));
    expect(parse([], env)).toEqual({
      leaseTtlSeconds: 600,
      intervalMs: 60_000,
      metricsPort: 0,
      job: 'env-job',
      endpoints: ['http://c:3'],
      dataPath: 'grpc-js',
      fresh: true,
      point: { name: 'forward', action: 'stall' },
    });
    expect(parse(['--lease-ttl-s', '7', '--job', 'flag-job'], env)).toMatchObject({
      leaseTtlSeconds: 7,
      job: 'flag-job',
    });
  });

  it('hands out a fresh copy of a list default each time', () => {
    parse([]).endpoints.push('http://mutated:1');
    expect(parse([]).endpoints).toEqual(['http://127.0.0.1:2379']);
  });

  it('refuses a bad value with the flag, the value and what was expected', () => {
    expect(() => parse(['--lease-ttl-s', '0'])).toThrow(
      "option '--lease-ttl-s <s>' argument '0' is invalid. expected an integer from 1 to 600, got '0'.",
    );
    expect(() => parse([], { TEST_METRICS_PORT: '10' })).toThrow(
      "option '--metrics-port <port>' value '10' from env 'TEST_METRICS_PORT' is invalid. expected an integer from 0 to 9, got '10'.",
    );
    expect(() => parse(['--endpoints', ' , '])).toThrow(
      "expected a comma-separated list, got ' , '",
    );
    expect(() => parse(['--data-path', 'udp'])).toThrow(
      "option '--data-path <server>' argument 'udp' is invalid. Allowed choices are direct, grpc-js.",
    );
    expect(() => parse(['--point', 'forward'])).toThrow("expected <name>:<action>, got 'forward'.");
  });

  it('shows each flag with its default and variable in --help, hidden ones not at all', () => {
    const help = program().helpInformation().replace(/\s+/g, ' ');
    expect(help).toContain('--lease-ttl-s <s> lease TTL (default: 5, env: TEST_LEASE_TTL_S)');
    expect(help).toContain('--metrics-port <port> metrics (env: TEST_METRICS_PORT)');
    expect(help).toContain(
      '--data-path <server> who serves (choices: "direct", "grpc-js", default: "direct", env: TEST_DATA_PATH)',
    );
    expect(help).toContain('--allow-fresh-start start empty (env: TEST_ALLOW_FRESH_START)');
    expect(help).not.toContain('--point');
  });

  it('refuses a flag in a unit whose value is named otherwise', () => {
    const flag = { ...table.leaseTtlSeconds, flags: '--lease-ttl <ttl>' };
    expect(() => flagOption(flag, 'TEST')).toThrow(
      "flag '--lease-ttl <ttl>' is in s: name its value <s>",
    );
  });

  it('reads the log flags into log settings', () => {
    const parsed = program().parse(['--log-format', 'json'], { from: 'user' });
    expect(logSettings(flagValues(parsed, logFlags))).toEqual({
      logLevel: 'info',
      logFormat: 'json',
    });
    expect(() => program().parse(['--log-level', 'loud'], { from: 'user' })).toThrow(
      "option '--log-level <level>' argument 'loud' is invalid.",
    );
  });
});
