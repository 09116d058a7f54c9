import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { EtcdSecuritySettings } from '@pserver/config';
import type { EtcdServer } from './etcd-server';
import { tempDir } from './temp-dir';
import { workspaceRoot } from './workspace';

/** An etcd user a pserver or master runs as. */
export interface EtcdUser {
  name: string;
  /** Its password file; undefined for a user that authenticates by its certificate's CN. */
  passwordFile: string | undefined;
  /** What a process needs to reach etcd as this user: `clientArgs` plus the user's own flags. */
  args: string[];
  /** The same for `connectEtcd` (a test's own client acting as this user). */
  security: EtcdSecuritySettings;
}

/** The two users `tools/etcd/auth.sh job` creates for a job. */
export interface EtcdJobUsers {
  master: EtcdUser;
  pserver: EtcdUser;
}

export interface CreateJobUsersOptions {
  /**
   * `password` (default): users with random passwords in files, for `--etcd-user` and
   * `--etcd-password-file`. `certificate`: users without a password and a client certificate
   * each whose CN is the user name (etcd with TLS; its CA's key must sit beside the CA).
   */
  authenticateBy: 'password' | 'certificate';
}

/**
 * Authentication on a test etcd, through `tools/etcd/auth.sh` (the script SECURITY.md tells
 * operators to run): `enable` creates root and turns authentication on; `createJobUsers` creates a
 * job's master and pserver users with the key-prefix roles of the script, running it as root.
 */
export class EtcdAuth {
  private constructor(
    readonly etcd: EtcdServer,
    private readonly dir: string,
    private readonly rootPassword: string,
  ) {}

  /** Creates root (with a random password) and turns authentication on. */
  static async enable(etcd: EtcdServer): Promise<EtcdAuth> {
    const dir = tempDir('etcd-users');
    const rootPassword = randomBytes(12).toString('hex');
    const auth = new EtcdAuth(etcd, dir, rootPassword);
    await auth.script(['enable', auth.passwordFile('root', rootPassword)], false);
    return auth;
  }

  /** Creates the job's users and their roles with `tools/etcd/auth.sh job`. */
  async createJobUsers(
    job: string,
    options: Partial<CreateJobUsersOptions> = {},
  ): Promise<EtcdJobUsers> {
    const { authenticateBy = 'password' } = options;
    const names = { master: `pserver-${job}-master`, pserver: `pserver-${job}-pserver` };
    if (authenticateBy === 'password') {
      const files = {
        master: this.passwordFile(names.master, randomBytes(12).toString('hex')),
        pserver: this.passwordFile(names.pserver, randomBytes(12).toString('hex')),
      };
      await this.script(['job', job, files.master, files.pserver], true);
      return {
        master: this.passwordUser(names.master, files.master),
        pserver: this.passwordUser(names.pserver, files.pserver),
      };
    }
    const tls = this.etcd.tls;
    if (!tls) throw new Error('createJobUsers: certificate users need an etcd started with TLS');
    await this.script(['job', job], true);
    return {
      master: this.certificateUser(names.master, tls.ca),
      pserver: this.certificateUser(names.pserver, tls.ca),
    };
  }

  private passwordUser(name: string, passwordFile: string): EtcdUser {
    return {
      name,
      passwordFile,
      args: [...this.etcd.clientArgs, '--etcd-user', name, '--etcd-password-file', passwordFile],
      security: { ...this.etcd.security, username: name, passwordFile },
    };
  }

  /** A client certificate with CN=<name>, signed by the CA whose key is beside `ca`. */
  private certificateUser(name: string, ca: string): EtcdUser {
    const certs = path.dirname(ca);
    const script = path.join(workspaceRoot(), 'tools', 'certs', 'generate.sh');
    // generate.sh writes <dir>/<name>.pem beside the CA it signs with: a directory of our own.
    const own = fs.mkdtempSync(path.join(this.dir, 'certs-'));
    for (const file of ['ca.pem', 'ca.key'])
      fs.copyFileSync(path.join(certs, file), path.join(own, file));
    execFileSync('bash', [script, 'client', own, name, 'etcd-users'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const cert = path.join(own, `${name}.pem`);
    const key = path.join(own, `${name}.key`);
    return {
      name,
      passwordFile: undefined,
      args: [
        '--etcd-endpoints',
        this.etcd.endpoint,
        '--etcd-ca',
        ca,
        '--etcd-cert',
        cert,
        '--etcd-key',
        key,
      ],
      security: { ...this.etcd.security, certFile: cert, keyFile: key },
    };
  }

  private passwordFile(name: string, password: string): string {
    const file = path.join(this.dir, `${name}.password`);
    fs.writeFileSync(file, `${password}\n`, { mode: 0o600 });
    return file;
  }

  private script(args: string[], asRoot: boolean): Promise<string> {
    const script = path.join(workspaceRoot(), 'tools', 'etcd', 'auth.sh');
    return run('bash', [script, ...args], this.env(asRoot));
  }

  /** etcdctl's own variables: where etcd is, its TLS files, and root once authentication is on. */
  private env(asRoot: boolean): Record<string, string> {
    const { endpoint, tls } = this.etcd;
    return {
      ETCDCTL_API: '3',
      ETCDCTL_ENDPOINTS: endpoint,
      ...(tls
        ? { ETCDCTL_CACERT: tls.ca, ETCDCTL_CERT: tls.client.cert, ETCDCTL_KEY: tls.client.key }
        : {}),
      ...(asRoot ? { ETCDCTL_USER: 'root', ETCDCTL_PASSWORD: this.rootPassword } : {}),
    };
  }
}

function run(command: string, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { env: { ...process.env, ...env }, timeout: 30_000, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (err)
          reject(new Error(`${command} ${args.join(' ')} failed: ${err.message}\n${stderr}`));
        else resolve(stdout);
      },
    );
  });
}
