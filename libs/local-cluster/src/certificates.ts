import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { tempDir } from './temp-dir';
import { workspaceRoot } from './workspace';

/** A certificate and its key, as PEM file paths. */
export interface KeyPair {
  cert: string;
  key: string;
}

/** A test cluster's certificates, made by `tools/certs/generate.sh` (the script users run). */
export interface ClusterCertificates {
  dir: string;
  /** The CA of every certificate below but `outsider`. */
  ca: string;
  /** For pservers, masters and etcd: SANs localhost, 127.0.0.1 and ::1. */
  server: KeyPair;
  /** A client certificate with OU=trainers, CN=trainer. */
  trainer: KeyPair;
  /** A client certificate with OU=admins, CN=admin. */
  admin: KeyPair;
  /** A client certificate with OU=trainers from another CA, which servers must not trust. */
  outsider: KeyPair;
}

/** Makes a fresh set in a temporary directory (a few hundred milliseconds of openssl). */
export function generateCertificates(): ClusterCertificates {
  const dir = tempDir('certs');
  const script = path.join(workspaceRoot(), 'tools', 'certs', 'generate.sh');
  const run = (...args: string[]): void => {
    execFileSync('bash', [script, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  };
  const other = path.join(dir, 'other-ca');
  run('ca', dir);
  run('server', dir, 'server', 'DNS:localhost,IP:127.0.0.1,IP:::1');
  run('client', dir, 'trainer', 'trainers');
  run('client', dir, 'admin', 'admins');
  run('ca', other);
  run('client', other, 'outsider', 'trainers');
  const pair = (base: string, name: string): KeyPair => ({
    cert: path.join(base, `${name}.pem`),
    key: path.join(base, `${name}.key`),
  });
  return {
    dir,
    ca: path.join(dir, 'ca.pem'),
    server: pair(dir, 'server'),
    trainer: pair(dir, 'trainer'),
    admin: pair(dir, 'admin'),
    outsider: pair(other, 'outsider'),
  };
}
