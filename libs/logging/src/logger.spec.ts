import { PassThrough } from 'node:stream';
import { visit } from 'jsonc-parser';
import { createLogger } from './logger';

/** The keys of a line's top-level object in the order written, repeated ones as often as written. */
function keysOf(line: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  visit(line, {
    onObjectBegin: () => void depth++,
    onObjectEnd: () => void depth--,
    onObjectProperty: (key) => {
      if (depth === 1) keys.push(key);
    },
  });
  return keys;
}

function capture(): { stream: PassThrough; lines: () => string[] } {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')));
  return { stream, lines: () => chunks.join('').split('\n').filter(Boolean) };
}

describe('createLogger', () => {
  it('writes one JSON object per line with name, level, message and fields', () => {
    const out = capture();
    const log = createLogger({
      name: 'pserver',
      level: 'info',
      format: 'json',
      destination: out.stream,
    });
    log.info('listening', { address: '127.0.0.1:8080' });
    const [line] = out.lines();
    expect(JSON.parse(line ?? '')).toMatchObject({
      name: 'pserver',
      level: 'info',
      msg: 'listening',
      address: '127.0.0.1:8080',
      pid: process.pid,
    });
  });

  it('adds the context read at each line, leaving a field a child binds to the child', () => {
    const out = capture();
    let context: Record<string, unknown> = {};
    const log = createLogger({
      name: 'pserver',
      level: 'info',
      format: 'json',
      destination: out.stream,
      context: () => ({ component: 'node', ...context }),
    });
    log.info('waiting');
    context = { index: 2, shardEpoch: 7 };
    log.info('serving');
    log.child({ component: 'checkpoint' }).info('committed');
    const lines = out.lines();
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({ msg: 'waiting', component: 'node' }),
      expect.objectContaining({ msg: 'serving', component: 'node', index: 2, shardEpoch: 7 }),
      expect.objectContaining({ msg: 'committed', component: 'checkpoint', index: 2 }),
    ]);
    expect(lines[2]!.match(/"component"/g)).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).not.toHaveProperty('index');
  });

  it("writes each key once: a child's binding overrides its parent's, a field overrides both", () => {
    const out = capture();
    const log = createLogger({
      name: 'master',
      level: 'info',
      format: 'json',
      destination: out.stream,
      context: () => ({ term: 3 }),
    });
    const sessions = log.child({ component: 'leader', term: 4 }).child({ component: 'sessions' });
    sessions.info('trainer registered', { trainer: 1, term: 5 });
    sessions.info('trainer registered', { trainer: 2 });
    const lines = out.lines();
    for (const line of lines) expect(new Set(keysOf(line)).size).toBe(keysOf(line).length);
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({ name: 'master', component: 'sessions', trainer: 1, term: 5 }),
      expect.objectContaining({ name: 'master', component: 'sessions', trainer: 2, term: 4 }),
    ]);
  });

  it("keeps the process name and the line's own keys when a field or binding has their name", () => {
    const out = capture();
    const log = createLogger({
      name: 'master',
      level: 'info',
      format: 'json',
      destination: out.stream,
    });
    log
      .child({ name: 'sessions', pid: 1 })
      .info('trainer registered', { name: 'trainer-1', msg: 'm', level: 'x', time: 0 });
    const [line = ''] = out.lines();
    expect(new Set(keysOf(line)).size).toBe(keysOf(line).length);
    expect(JSON.parse(line)).toMatchObject({
      name: 'master',
      pid: process.pid,
      level: 'info',
      msg: 'trainer registered',
      _name: 'trainer-1',
      _pid: 1,
      _msg: 'm',
      _level: 'x',
      _time: 0,
    });
  });

  it('drops lines below its level', () => {
    const out = capture();
    const log = createLogger({ name: 't', level: 'warn', format: 'json', destination: out.stream });
    log.info('hidden');
    log.warn('shown');
    expect(out.lines().map((l) => JSON.parse(l).msg)).toEqual(['shown']);
  });

  it('carries child bindings and serializes errors with their stack', () => {
    const out = capture();
    const log = createLogger({ name: 't', level: 'info', format: 'json', destination: out.stream });
    log.child({ component: 'checkpoint' }).error('write failed', { err: new Error('ENOSPC') });
    const entry = JSON.parse(out.lines()[0] ?? '');
    expect(entry.component).toBe('checkpoint');
    expect(entry.err.message).toBe('ENOSPC');
    expect(entry.err.stack).toContain('Error: ENOSPC');
  });

  it('writes readable lines in pretty format', () => {
    const out = capture();
    const log = createLogger({
      name: 't',
      level: 'info',
      format: 'pretty',
      destination: out.stream,
    });
    log.info('listening', { port: 8080 });
    const text = out.lines().join('\n');
    expect(text).toContain('INFO');
    expect(text).toContain('listening');
    expect(text).toContain('port: 8080');
    expect(() => JSON.parse(out.lines()[0] ?? '')).toThrow();
  });
});
