import { Command } from 'commander';
import { integerOption, listOption } from './options';

function parse(args: string[]) {
  const program = new Command().exitOverride().configureOutput({ writeErr: () => undefined });
  program.addOption(integerOption('--port <n>', 'port', 'TEST_PORT', 8100, 0, 65_535));
  program.addOption(listOption('--endpoints <list>', 'endpoints', 'TEST_ENDPOINTS'));
  program.parse(args, { from: 'user' });
  return program.opts<{ port: number; endpoints?: string[] }>();
}

describe('single options', () => {
  it('parses integers and lists, with defaults', () => {
    expect(parse(['--endpoints', 'http://a:1, http://b:2'])).toEqual({
      port: 8100,
      endpoints: ['http://a:1', 'http://b:2'],
    });
  });

  it('names the flag and the value when an integer is out of range', () => {
    expect(() => parse(['--port', '70000'])).toThrow(
      "option '--port <n>' argument '70000' is invalid. expected an integer from 0 to 65535, got '70000'.",
    );
  });

  it('refuses an empty list', () => {
    expect(() => parse(['--endpoints', ' , '])).toThrow(
      "expected a comma-separated list, got ' , '",
    );
  });
});
