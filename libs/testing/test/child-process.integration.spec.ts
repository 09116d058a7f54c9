import { spawnNode, stopAllProcesses } from '../src';

const nodeEval = (code: string, name: string) => spawnNode('-e', [code], { name });

afterAll(stopAllProcesses);

describe('ManagedProcess', () => {
  it('captures output lines and waits for one', async () => {
    const child = nodeEval(
      'console.log("ready"); console.log(JSON.stringify({ msg: "listening", port: 5 }))',
      'echo',
    );
    await expect(child.waitForLine((l) => l === 'ready', { timeoutMs: 10_000 })).resolves.toBe(
      'ready',
    );
    const entry = await child.waitForLog((e) => e.msg === 'listening', { timeoutMs: 10_000 });
    expect(entry.port).toBe(5);
    expect(await child.exited).toEqual({ code: 0, signal: null });
  });

  it('rejects waitForLine when the process exits first, naming it', async () => {
    const child = nodeEval('console.log("bye"); process.exit(3)', 'quitter');
    await expect(child.waitForLine((l) => l === 'never', { timeoutMs: 10_000 })).rejects.toThrow(
      /quitter \(pid \d+\): exited \(code 3\) before a matching line/,
    );
  });

  it('pauses with SIGSTOP, resumes with SIGCONT and stops with SIGTERM', async () => {
    const child = nodeEval(
      'let n = 0; setInterval(() => console.log("tick " + n++), 20);' +
        'process.on("SIGTERM", () => { console.log("graceful"); process.exit(0); });',
      'ticker',
    );
    await child.waitForLine((l) => l.startsWith('tick'), { timeoutMs: 10_000 });
    child.signal('SIGSTOP');
    await new Promise((r) => setTimeout(r, 100));
    const countWhilePaused = child.lines.length;
    await new Promise((r) => setTimeout(r, 300));
    expect(child.lines.length).toBe(countWhilePaused);
    child.signal('SIGCONT');
    await child.waitForLine((l) => l === `tick ${countWhilePaused + 2}`, { timeoutMs: 10_000 });
    expect(await child.stop()).toEqual({ code: 0, signal: null });
    expect(child.lines).toContain('graceful');
  });

  it('SIGKILLs a process that ignores SIGTERM after the grace period', async () => {
    const child = nodeEval(
      'process.on("SIGTERM", () => {}); console.log("up"); setInterval(() => {}, 1000)',
      'stubborn',
    );
    await child.waitForLine((l) => l === 'up', { timeoutMs: 10_000 });
    expect(await child.stop({ graceMs: 200 })).toEqual({ code: null, signal: 'SIGKILL' });
  });
});
