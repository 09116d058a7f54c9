import type { PeerCertificate } from 'node:tls';
import { Metadata } from '@grpc/grpc-js';
import { parseAccessConfig, AccessConfigError } from './access-config';
import { accessTo, mayCall, type Role } from './access-policy';
import { Authenticator } from './authenticator';
import { channelSecurity } from './client-security';
import { isLoopback } from './server-security';

const trainerToken = 'a'.repeat(32);
const adminToken = 'b'.repeat(32);
const tokenFiles: Record<string, string> = {
  'trainer.token': `${trainerToken}\n`,
  'admin.token': adminToken,
};
const readTokenFile = (file: string): string => {
  const token = tokenFiles[file];
  if (token === undefined) throw new Error(`ENOENT: ${file}`);
  return token;
};

const config = parseAccessConfig(
  JSON.stringify({
    clientCertificates: [
      { ou: 'trainers', role: 'trainer' },
      { cn: 'ops', role: 'admin' },
      { san: 'URI:spiffe://ml/dashboard', role: 'viewer' },
    ],
    tokens: [
      { name: 'ci', file: 'trainer.token', role: 'trainer' },
      { name: 'root', file: 'admin.token', role: 'admin' },
    ],
  }),
  'auth.json',
  readTokenFile,
);

function certificate(subject: Record<string, string | string[]>, san = ''): PeerCertificate {
  return { subject, subjectaltname: san } as unknown as PeerCertificate;
}

function metadataWith(header?: string): Metadata {
  const metadata = new Metadata();
  if (header !== undefined) metadata.set('authorization', header);
  return metadata;
}

const rolesOf = (result: ReturnType<Authenticator['identify']>): Role[] => {
  if ('refusal' in result) throw new Error(`refused: ${result.refusal}`);
  return [...result.roles].sort();
};

describe('the access config', () => {
  const parse = (json: unknown): unknown =>
    parseAccessConfig(JSON.stringify(json), 'auth.json', readTokenFile);

  it('reads certificate rules and tokens, keeping only digests of the tokens', () => {
    expect(config.certificateRules).toEqual([
      { field: 'ou', value: 'trainers', role: 'trainer' },
      { field: 'cn', value: 'ops', role: 'admin' },
      { field: 'san', value: 'URI:spiffe://ml/dashboard', role: 'viewer' },
    ]);
    expect(config.tokens.map(({ name, role }) => [name, role])).toEqual([
      ['ci', 'trainer'],
      ['root', 'admin'],
    ]);
    expect(JSON.stringify(config)).not.toContain(trainerToken);
  });

  it.each([
    ['not JSON', '{', /not JSON/],
    ['an unknown field', { tokenz: [] }, /unknown field "tokenz"/],
    [
      'an unknown role',
      { tokens: [{ name: 'x', file: 'trainer.token', role: 'root' }] },
      /"role" must be one of trainer, viewer, admin, pserver, got "root"/,
    ],
    [
      'two match fields',
      { clientCertificates: [{ cn: 'a', ou: 'b', role: 'admin' }] },
      /clientCertificates\[0\]: give exactly one of/,
    ],
    ['no match field', { clientCertificates: [{ role: 'admin' }] }, /give exactly one of/],
    [
      'a missing token file',
      { tokens: [{ name: 'x', file: 'gone', role: 'admin' }] },
      /tokens\[0\]: cannot read the token file gone: ENOENT/,
    ],
    [
      'a short token',
      { tokens: [{ name: 'x', file: 'short', role: 'admin' }] },
      /the token in short has 5 characters; use at least 16/,
    ],
    [
      'a name used twice',
      {
        tokens: [
          { name: 'x', file: 'trainer.token', role: 'admin' },
          { name: 'x', file: 'admin.token', role: 'admin' },
        ],
      },
      /the name "x" is used twice/,
    ],
    [
      'a token listed twice',
      {
        tokens: [
          { name: 'x', file: 'trainer.token', role: 'admin' },
          { name: 'y', file: 'trainer.token', role: 'trainer' },
        ],
      },
      /the same token is listed twice/,
    ],
  ])('refuses %s, naming the file and field', (_what, json, message) => {
    tokenFiles['short'] = 'abcde';
    const text = typeof json === 'string' ? json : JSON.stringify(json);
    expect(() => parseAccessConfig(text, 'auth.json', readTokenFile)).toThrow(AccessConfigError);
    expect(() => parseAccessConfig(text, 'auth.json', readTokenFile)).toThrow(message);
    expect(() => parse(json)).toThrow(/^--auth-config auth\.json: /);
  });
});

describe('the authenticator', () => {
  const authenticator = new Authenticator(config);

  it('maps a verified certificate by OU, CN or SAN', () => {
    expect(
      rolesOf(
        authenticator.identify(metadataWith(), {
          sslPeerCertificate: certificate({ OU: 'trainers', CN: 't1' }),
        }),
      ),
    ).toEqual(['trainer']);
    expect(
      rolesOf(
        authenticator.identify(metadataWith(), {
          sslPeerCertificate: certificate({ OU: ['x', 'trainers'], CN: 'ops' }),
        }),
      ),
    ).toEqual(['admin', 'trainer']);
    expect(
      rolesOf(
        authenticator.identify(metadataWith(), {
          sslPeerCertificate: certificate({ CN: 'd' }, 'DNS:d.example, URI:spiffe://ml/dashboard'),
        }),
      ),
    ).toEqual(['viewer']);
  });

  it('gives a certificate that matches no rule no role, and names it', () => {
    const result = authenticator.identify(metadataWith(), {
      sslPeerCertificate: certificate({ CN: 'stranger', OU: 'guests' }),
    });
    expect(result).toEqual({ name: 'stranger', roles: new Set() });
  });

  it('takes the role of a known bearer token', () => {
    expect(rolesOf(authenticator.identify(metadataWith(`Bearer ${trainerToken}`), {}))).toEqual([
      'trainer',
    ]);
    expect(rolesOf(authenticator.identify(metadataWith(`Bearer ${adminToken}`), null))).toEqual([
      'admin',
    ]);
  });

  it.each([
    ['no credentials', metadataWith(), /neither a client certificate .* nor a bearer token/],
    ['an unknown token', metadataWith(`Bearer ${'c'.repeat(32)}`), /not one this server knows/],
    [
      'a token one character short',
      metadataWith(`Bearer ${trainerToken.slice(1)}`),
      /not one this server knows/,
    ],
    ['another scheme', metadataWith(`Basic ${trainerToken}`), /is not "Bearer <token>"/],
  ])('refuses %s', (_what, metadata, message) => {
    const result = authenticator.identify(metadata, {});
    expect('refusal' in result && result.refusal).toMatch(message);
  });

  it('refuses two authorization headers', () => {
    const metadata = metadataWith(`Bearer ${trainerToken}`);
    metadata.add('authorization', `Bearer ${adminToken}`);
    expect(authenticator.identify(metadata, {})).toEqual({
      refusal: 'the call carries more than one authorization header',
    });
  });

  it('refuses a wrong token even next to a good certificate', () => {
    const result = authenticator.identify(metadataWith('Bearer wrong-token-wrong-token'), {
      sslPeerCertificate: certificate({ OU: 'trainers' }),
    });
    expect(result).toHaveProperty('refusal');
  });

  it('without an access config, makes every verified certificate an admin', () => {
    const open = new Authenticator(undefined);
    expect(
      rolesOf(open.identify(metadataWith(), { sslPeerCertificate: certificate({ CN: 'any' }) })),
    ).toEqual(['admin']);
    expect(open.identify(metadataWith(), {})).toHaveProperty('refusal');
  });
});

describe('the access policy', () => {
  const trainer = new Set<Role>(['trainer']);
  const viewer = new Set<Role>(['viewer']);
  const admin = new Set<Role>(['admin']);
  const nobody = new Set<Role>();

  it('lets trainers push, pull and use the master, but not administer', () => {
    for (const method of [
      'InitParam',
      'FinishInitParams',
      'SendGrads',
      'SendGradsStream',
      'GetParams',
      'GetShardStatus',
    ])
      expect(mayCall(`/pserver.v1.ParameterServer/${method}`, trainer)).toBe(true);
    for (const method of [
      'RegisterTrainer',
      'KeepAlive',
      'WatchCluster',
      'BeginInit',
      'GetTask',
      'SetDataset',
      'Status',
    ])
      expect(mayCall(`/pserver.v1.Master/${method}`, trainer)).toBe(true);
    expect(mayCall('/pserver.v1.ParameterServer/SaveCheckpoint', trainer)).toBe(false);
    expect(mayCall('/pserver.v1.Master/SetDesiredShards', trainer)).toBe(false);
  });

  it('lets viewers read status and nothing else', () => {
    expect(mayCall('/pserver.v1.ParameterServer/GetShardStatus', viewer)).toBe(true);
    expect(mayCall('/pserver.v1.Master/Status', viewer)).toBe(true);
    expect(mayCall('/pserver.v1.ParameterServer/GetParams', viewer)).toBe(false);
    expect(mayCall('/pserver.v1.ParameterServer/SendGrads', viewer)).toBe(false);
  });

  it('lets admins call everything, unknown methods included', () => {
    expect(mayCall('/pserver.v1.ParameterServer/SaveCheckpoint', admin)).toBe(true);
    expect(mayCall('/pserver.v1.Master/SetDesiredShards', admin)).toBe(true);
    expect(mayCall('/pserver.v1.Master/SomeFutureAdminCall', admin)).toBe(true);
  });

  it('closes unknown methods to everyone else and opens health to all', () => {
    expect(accessTo('/pserver.v1.Master/SomeFutureAdminCall')).toEqual([]);
    expect(mayCall('/pserver.v1.Master/SomeFutureAdminCall', trainer)).toBe(false);
    expect(mayCall('/grpc.health.v1.Health/Check', nobody)).toBe(true);
    expect(mayCall('/grpc.reflection.v1.ServerReflection/ServerReflectionInfo', nobody)).toBe(
      false,
    );
    expect(mayCall('/grpc.reflection.v1.ServerReflection/ServerReflectionInfo', viewer)).toBe(true);
  });
});

describe('client and server settings', () => {
  it('refuses to send a token in plaintext', () => {
    expect(() => channelSecurity({ token: trainerToken })).toThrow(/a bearer token needs TLS/);
  });

  it('names the server for certificates issued to another name', () => {
    expect(channelSecurity({ tls: { serverName: 'pserver.ml.svc' } }).options).toEqual({
      'grpc.initial_reconnect_backoff_ms': 200,
      'grpc.max_reconnect_backoff_ms': 1_000,
      'grpc.ssl_target_name_override': 'pserver.ml.svc',
      'grpc.default_authority': 'pserver.ml.svc',
    });
  });

  it.each([
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['localhost', true],
    ['::1', true],
    ['[::1]', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.5', false],
    ['pserver-0.ml.svc', false],
  ])('knows whether %s is loopback', (host, loopback) => {
    expect(isLoopback(host)).toBe(loopback);
  });
});
