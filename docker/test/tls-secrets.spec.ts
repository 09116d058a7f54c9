import { execFileSync, spawnSync } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Metadata } from '@grpc/grpc-js';
import * as core from 'kubernetes-models/v1';
import { Authenticator, loadAccessConfig } from '@pserver/rpc';
import { dockerDir, makeTlsSecrets, tlsOverlayDir, type TlsSecrets } from './deployment-files';

// docker/k8s-tls/make-secrets.sh, run into temporary directories: what it writes is what the
// overlay mounts, so every check here reads the certificates back out of secrets.yaml.

const dirs: string[] = [];
const newDir = (): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'make-secrets-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** Writes a Secret's keys as files into a directory of their own; returns the directory. */
function extract(made: TlsSecrets, name: string): string {
  const dir = newDir();
  for (const [key, bytes] of made.secrets.get(name)!) fs.writeFileSync(path.join(dir, key), bytes);
  return dir;
}

/** `openssl verify`: throws (with openssl's message) when the certificate does not verify. */
function verify(caFile: string, certFile: string, purpose: 'sslserver' | 'sslclient'): string {
  return execFileSync('openssl', ['verify', '-CAfile', caFile, '-purpose', purpose, certFile], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

const certificate = (file: string): X509Certificate => new X509Certificate(fs.readFileSync(file));

describe('make-secrets.sh', () => {
  let made: TlsSecrets;
  beforeAll(() => {
    made = makeTlsSecrets(newDir());
  });

  it('writes the Secrets pserver-tls, pserver-auth and pserver-trainer-tls of the files it made', () => {
    expect(
      made.objects.map((o) => [o.kind, o.metadata.name, o.metadata.namespace, Object.keys(o.data)]),
    ).toEqual([
      ['Secret', 'pserver-tls', 'pserver', ['ca.pem', 'server.pem', 'server.key']],
      ['Secret', 'pserver-auth', 'pserver', ['auth.json']],
      ['Secret', 'pserver-trainer-tls', 'pserver', ['ca.pem', 'trainer.pem', 'trainer.key']],
    ]);
    for (const object of made.objects)
      expect(() => new core.Secret(object).validate()).not.toThrow();
    for (const [, data] of made.secrets)
      for (const [key, bytes] of data)
        expect([key, bytes.equals(fs.readFileSync(path.join(made.dir, key)))]).toEqual([key, true]);
    // No Secret carries the CA key, or the admin's credentials.
    const keys = [...made.secrets.values()].flatMap((data) => [...data.keys()]);
    expect(keys).not.toContain('ca.key');
    expect(keys.filter((k) => k.startsWith('admin'))).toEqual([]);
  });

  it('keeps the keys and secrets.yaml owner-only', () => {
    for (const file of ['ca.key', 'server.key', 'trainer.key', 'admin.key', 'secrets.yaml']) {
      const mode = fs.statSync(path.join(made.dir, file)).mode & 0o777;
      expect([file, mode & 0o077]).toEqual([file, 0]);
    }
  });

  it('signs the server and trainer certificates in the Secrets with the CA in them', () => {
    const server = extract(made, 'pserver-tls');
    const trainer = extract(made, 'pserver-trainer-tls');
    expect(verify(`${server}/ca.pem`, `${server}/server.pem`, 'sslserver')).toContain(': OK');
    expect(verify(`${trainer}/ca.pem`, `${trainer}/trainer.pem`, 'sslclient')).toContain(': OK');
    expect(fs.readFileSync(`${server}/ca.pem`)).toEqual(fs.readFileSync(`${trainer}/ca.pem`));
    // Each key is its certificate's.
    for (const [dir, name] of [
      [server, 'server'],
      [trainer, 'trainer'],
    ] as const)
      expect(
        certificate(`${dir}/${name}.pem`).checkPrivateKey(
          createPrivateKey(fs.readFileSync(`${dir}/${name}.key`)),
        ),
      ).toBe(true);
    // The check can fail: another CA does not vouch for them.
    const other = newDir();
    execFileSync('bash', [
      path.join(dockerDir, '..', 'tools', 'certs', 'generate.sh'),
      'ca',
      other,
    ]);
    expect(() => verify(`${other}/ca.pem`, `${server}/server.pem`, 'sslserver')).toThrow();
  });

  it('names pserver.internal in the server certificate unless told another name', () => {
    const server = certificate(path.join(extract(made, 'pserver-tls'), 'server.pem'));
    expect(server.subjectAltName).toBe('DNS:pserver.internal');
    expect(server.checkHost('pserver.internal')).toBe('pserver.internal');
    expect(server.checkHost('master')).toBeUndefined();

    const named = makeTlsSecrets(newDir(), 'ps.ml.example.org');
    const other = new X509Certificate(named.secrets.get('pserver-tls')!.get('server.pem')!);
    expect(other.subjectAltName).toBe('DNS:ps.ml.example.org');
  });

  it('refuses a server name that is not a DNS name (it would add SANs)', () => {
    const dir = newDir();
    const run = spawnSync(
      'bash',
      [path.join(tlsOverlayDir, 'make-secrets.sh'), dir, 'x,IP:10.0.0.1'],
      { encoding: 'utf8' },
    );
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('must be a DNS name');
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('writes an auth.json that gives the trainer certificate the trainer role and the admin one admin', () => {
    const auth = extract(made, 'pserver-auth');
    const authenticator = new Authenticator(loadAccessConfig(path.join(auth, 'auth.json')));
    const rolesOf = (file: string): string[] => {
      const caller = authenticator.identify(new Metadata(), {
        transportSecurityType: 'ssl',
        sslPeerCertificate: certificate(file).toLegacyObject(),
      });
      if ('refusal' in caller) throw new Error(caller.refusal);
      return [...caller.roles];
    };
    expect(rolesOf(path.join(made.dir, 'trainer.pem'))).toEqual(['trainer']);
    expect(rolesOf(path.join(made.dir, 'admin.pem'))).toEqual(['admin']);
    expect(
      verify(path.join(made.dir, 'ca.pem'), path.join(made.dir, 'admin.pem'), 'sslclient'),
    ).toContain(': OK');
    // The server's own certificate holds no role.
    expect(rolesOf(path.join(made.dir, 'server.pem'))).toEqual([]);
  });

  it('keeps the CA when run again, so clients holding it trust the renewed server certificate', () => {
    const dir = newDir();
    const first = makeTlsSecrets(dir);
    const oldCa = path.join(newDir(), 'ca.pem');
    fs.writeFileSync(oldCa, first.secrets.get('pserver-trainer-tls')!.get('ca.pem')!);
    const second = makeTlsSecrets(dir);
    const renewed = second.secrets.get('pserver-tls')!;
    expect(renewed.get('server.pem')).not.toEqual(
      first.secrets.get('pserver-tls')!.get('server.pem'),
    );
    expect(renewed.get('ca.pem')).toEqual(fs.readFileSync(oldCa));
    const serverFile = path.join(newDir(), 'server.pem');
    fs.writeFileSync(serverFile, renewed.get('server.pem')!);
    expect(verify(oldCa, serverFile, 'sslserver')).toContain(': OK');
  });

  it('refuses to run with half a CA (ca.key moved offline) rather than make a new one', () => {
    const dir = newDir();
    makeTlsSecrets(dir);
    fs.renameSync(path.join(dir, 'ca.key'), path.join(newDir(), 'ca.key'));
    const before = fs.readFileSync(path.join(dir, 'secrets.yaml'));
    const run = spawnSync('bash', [path.join(tlsOverlayDir, 'make-secrets.sh'), dir], {
      encoding: 'utf8',
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('bring back ca.key');
    expect(fs.readFileSync(path.join(dir, 'secrets.yaml'))).toEqual(before);
  });
});
