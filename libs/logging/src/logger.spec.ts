import { PassThrough } from 'node:stream';
import { createLogger } from './logger';

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
