import { Option } from 'commander';
import { flagOption, flagTable } from './flag-table';

/** A gRPC server's TLS and access settings (SECURITY.md). Paths only: files are read at start. */
export interface ServerSecuritySettings {
  /** Serve TLS with this certificate chain and key (PEM). */
  tls: { certFile: string; keyFile: string; clientCaFile: string | undefined } | undefined;
  /** Roles of client certificates and bearer tokens; without it every known caller is admin. */
  authConfigFile: string | undefined;
}

/** `--tls-cert`, `--tls-key`, `--tls-client-ca`, `--auth-config`: a server's TLS and access. */
export const serverSecurityFlags = flagTable({
  tlsCert: {
    kind: 'text',
    flags: '--tls-cert <file>',
    help: 'serve TLS with this certificate chain (PEM)',
  },
  tlsKey: { kind: 'text', flags: '--tls-key <file>', help: 'the private key of --tls-cert (PEM)' },
  tlsClientCa: {
    kind: 'text',
    flags: '--tls-client-ca <file>',
    help: 'verify client certificates against this CA (PEM); calls then need a certificate or a token',
  },
  authConfig: {
    kind: 'text',
    flags: '--auth-config <file>',
    help: 'roles of client certificates and bearer tokens (JSON, see SECURITY.md)',
  },
});

/** The options of `serverSecurityFlags`, with `<PREFIX>_…` variables. */
export function serverSecurityOptions(envPrefix: string): Option[] {
  return Object.values(serverSecurityFlags).map((flag) => flagOption(flag, envPrefix));
}

/** The settings from parsed options; `fail` reports a flag combination that cannot work. */
export function serverSecuritySettings(
  o: { tlsCert?: string; tlsKey?: string; tlsClientCa?: string; authConfig?: string },
  fail: (message: string) => never,
): ServerSecuritySettings {
  if ((o.tlsCert === undefined) !== (o.tlsKey === undefined))
    fail('error: --tls-cert and --tls-key go together');
  if (o.tlsClientCa !== undefined && o.tlsCert === undefined)
    fail('error: --tls-client-ca needs --tls-cert and --tls-key (client certificates need TLS)');
  return {
    tls:
      o.tlsCert !== undefined && o.tlsKey !== undefined
        ? { certFile: o.tlsCert, keyFile: o.tlsKey, clientCaFile: o.tlsClientCa }
        : undefined,
    authConfigFile: o.authConfig,
  };
}

/** A client's TLS and token files, as `loadClientSecurity` (`@pserver/rpc`) reads them. */
export interface ClientSecurityFlags {
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsServerName?: string;
  tokenFile?: string;
}

/** `--tls-ca`, `--tls-cert`, `--tls-key`, `--tls-server-name`, `--token-file`: a client's security. */
export function clientSecurityOptions(): Option[] {
  return [
    new Option('--tls-ca <file>', 'connect with TLS; the CA of the servers’ certificates (PEM)'),
    new Option('--tls-cert <file>', 'client certificate for mutual TLS (PEM)'),
    new Option('--tls-key <file>', 'its private key (PEM)'),
    new Option(
      '--tls-server-name <name>',
      'the name in the servers’ certificates, if not the host',
    ),
    new Option('--token-file <file>', 'send the bearer token in this file (needs TLS)'),
  ];
}

/** The files the client security flags name, in `loadClientSecurity`'s terms. */
export function clientSecurityFiles(o: ClientSecurityFlags): {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  serverName?: string;
  tokenFile?: string;
} {
  return {
    caFile: o.tlsCa,
    certFile: o.tlsCert,
    keyFile: o.tlsKey,
    serverName: o.tlsServerName,
    tokenFile: o.tokenFile,
  };
}

/** How a process reaches etcd beyond its endpoints: TLS and etcd's own users. */
export interface EtcdSecuritySettings {
  /** The CA that signed etcd's server certificate (endpoints are then https://). */
  caFile: string | undefined;
  /** A client certificate and key, for an etcd started with --client-cert-auth. */
  certFile: string | undefined;
  keyFile: string | undefined;
  /** An etcd user (etcd with authentication enabled); its password is read from a file. */
  username: string | undefined;
  passwordFile: string | undefined;
}

/** `--etcd-ca`, `--etcd-cert`, `--etcd-key`, `--etcd-user`, `--etcd-password-file`. */
export const etcdSecurityFlags = flagTable({
  etcdCa: {
    kind: 'text',
    flags: '--etcd-ca <file>',
    help: 'CA of etcd’s server certificate (PEM)',
  },
  etcdCert: {
    kind: 'text',
    flags: '--etcd-cert <file>',
    help: 'client certificate for etcd (PEM)',
  },
  etcdKey: { kind: 'text', flags: '--etcd-key <file>', help: 'private key of --etcd-cert (PEM)' },
  etcdUser: {
    kind: 'text',
    flags: '--etcd-user <name>',
    help: 'etcd user (etcd with authentication enabled)',
  },
  etcdPasswordFile: {
    kind: 'text',
    flags: '--etcd-password-file <file>',
    help: 'file holding the etcd user’s password',
  },
});

/** The options of `etcdSecurityFlags`, with `<PREFIX>_…` variables. */
export function etcdSecurityOptions(envPrefix: string): Option[] {
  return Object.values(etcdSecurityFlags).map((flag) => flagOption(flag, envPrefix));
}

/** The settings from parsed options; `fail` reports a flag combination that cannot work. */
export function etcdSecuritySettings(
  o: {
    etcdCa?: string;
    etcdCert?: string;
    etcdKey?: string;
    etcdUser?: string;
    etcdPasswordFile?: string;
  },
  fail: (message: string) => never,
): EtcdSecuritySettings {
  if ((o.etcdCert === undefined) !== (o.etcdKey === undefined))
    fail('error: --etcd-cert and --etcd-key go together');
  if ((o.etcdUser === undefined) !== (o.etcdPasswordFile === undefined))
    fail('error: --etcd-user and --etcd-password-file go together');
  return {
    caFile: o.etcdCa,
    certFile: o.etcdCert,
    keyFile: o.etcdKey,
    username: o.etcdUser,
    passwordFile: o.etcdPasswordFile,
  };
}
