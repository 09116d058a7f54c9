import { execFile, execFileSync } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

/** docker/local: the podman settings and the scripts that build the images on this machine. */
export const localDir = path.join(__dirname, '..', 'local');

/** The environment of every podman call of the suite: the project's settings, never /etc's. */
export const podmanEnv = {
  ...process.env,
  CONTAINERS_CONF: process.env.CONTAINERS_CONF ?? path.join(localDir, 'containers.conf'),
};

/**
 * Fails, naming what is missing, where the container suite cannot run: it needs root (podman
 * with runc, debootstrap) and Debian's container packages, which `tools/setup/ensure.sh` installs.
 */
export function requireContainerRuntime(): void {
  if (process.getuid?.() !== 0)
    throw new Error(
      'the container suite needs root: podman runs containers with runc as root here',
    );
  const missing = [
    'podman',
    'podman-compose',
    'debootstrap',
    'runc',
    'iptables',
    'netavark',
  ].filter((tool) => {
    try {
      execFileSync('sh', ['-c', `command -v ${tool} || test -x /usr/lib/podman/${tool}`]);
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length > 0)
    throw new Error(
      `the container suite needs ${missing.join(', ')}: run 'bash tools/setup/ensure.sh' as root, or ` +
        "'apt-get install --no-install-recommends podman podman-compose debootstrap runc uidmap " +
        "slirp4netns fuse-overlayfs netavark aardvark-dns conmon catatonit iptables'",
    );
}

/** Runs podman and returns its standard output, trimmed; a failure carries podman's stderr. */
export function podman(...args: string[]): string {
  try {
    return execFileSync('podman', args, {
      encoding: 'utf8',
      env: podmanEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
  } catch (err) {
    throw failed(args, err);
  }
}

/** `podman`, without blocking the event loop (for calls that wait: stop, wait, kill). */
export async function podmanAsync(...args: string[]): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)('podman', args, {
      encoding: 'utf8',
      env: podmanEnv,
    });
    return stdout.trim();
  } catch (err) {
    throw failed(args, err);
  }
}

/** A failed podman call, with what podman said on stderr. */
function failed(args: string[], err: unknown): Error {
  const stderr = String((err as { stderr?: unknown }).stderr ?? '').trim();
  return new Error(`podman ${args.join(' ')}: ${stderr || String(err)}`, { cause: err });
}

/**
 * The containers one test run starts, all labelled with the run, so that every one of them is
 * removed at the end, also when the test fails.
 */
export class TestContainers {
  readonly label = `pserver-test=${process.pid}-${Date.now()}`;

  /** `podman run --detach` of `image` with `options` before it and `command` after; the name. */
  start(name: string, options: string[], image: string, command: string[]): string {
    podman('run', '--detach', '--name', name, '--label', this.label, ...options, image, ...command);
    return name;
  }

  /** The arguments that label a container started elsewhere (`podman run` in the foreground). */
  labelled(): string[] {
    return ['--label', this.label];
  }

  state(name: string): { status: string; exitCode: number; restarts: number } {
    const [status, exitCode, restarts] = podman(
      'inspect',
      '--format',
      '{{.State.Status}} {{.State.ExitCode}} {{.RestartCount}}',
      name,
    ).split(' ');
    return { status: status!, exitCode: Number(exitCode), restarts: Number(restarts) };
  }

  logs(name: string): string[] {
    return execFileSync('podman', ['logs', name], {
      encoding: 'utf8',
      env: podmanEnv,
      stdio: 'pipe',
    })
      .split('\n')
      .filter(Boolean);
  }

  /** Removes every container of the run; one that goes away meanwhile (`--rm`) is no error. */
  async removeAll(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const ids = podman('ps', '--all', '--quiet', '--filter', `label=${this.label}`);
      if (!ids) return;
      try {
        await podmanAsync('rm', '--force', '--ignore', '--time=0', ...ids.split('\n'));
      } catch (err) {
        if (attempt === 3) throw err;
      }
    }
  }
}
