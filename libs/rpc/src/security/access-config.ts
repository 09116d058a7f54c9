import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { isRole, roles, type Role } from './access-policy';

/**
 * The `--auth-config` file: which client certificates and which bearer tokens hold which roles.
 *
 *     {
 *       "clientCertificates": [
 *         { "ou": "trainers", "role": "trainer" },
 *         { "cn": "ops", "role": "admin" },
 *         { "san": "URI:spiffe://ml/admin", "role": "admin" }
 *       ],
 *       "tokens": [{ "name": "ci-trainers", "file": "tokens/trainer", "role": "trainer" }]
 *     }
 *
 * A certificate rule matches one subject field exactly (`cn`, `ou`) or one subject alternative
 * name as Node prints it (`DNS:…`, `URI:…`, `IP Address:…`, `email:…`). A token file holds one
 * token (surrounding whitespace ignored); relative paths are relative to the config file.
 */
export interface AccessConfig {
  certificateRules: CertificateRule[];
  tokens: KnownToken[];
}

export interface CertificateRule {
  field: 'cn' | 'ou' | 'san';
  value: string;
  role: Role;
}

export interface KnownToken {
  name: string;
  role: Role;
  /** SHA-256 of the token: compared in constant time, and the token itself is not kept. */
  digest: Buffer;
}

/** Shorter tokens are refused: a token is a password that is never typed. */
export const minTokenLength = 16;

export class AccessConfigError extends Error {
  override readonly name = 'AccessConfigError';
}

export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Reads and checks the file; every problem is an `AccessConfigError` naming the file and field. */
export function loadAccessConfig(file: string): AccessConfig {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new AccessConfigError(`--auth-config ${file}: ${(err as Error).message}`);
  }
  return parseAccessConfig(text, file, (tokenFile) =>
    fs.readFileSync(path.resolve(path.dirname(file), tokenFile), 'utf8'),
  );
}

export function parseAccessConfig(
  text: string,
  source: string,
  readTokenFile: (file: string) => string,
): AccessConfig {
  const fail = (message: string): never => {
    throw new AccessConfigError(`--auth-config ${source}: ${message}`);
  };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return fail(`not JSON: ${(err as Error).message}`);
  }
  if (!isObject(json)) return fail('expected an object with "clientCertificates" and "tokens"');
  for (const key of Object.keys(json)) {
    if (key !== 'clientCertificates' && key !== 'tokens') fail(`unknown field "${key}"`);
  }
  const certificateRules = listAt(json, 'clientCertificates', fail).map((entry, i) => {
    const where = `clientCertificates[${i}]`;
    const fields = (['cn', 'ou', 'san'] as const).filter((field) => field in entry);
    const extra = Object.keys(entry).filter((k) => !['cn', 'ou', 'san', 'role'].includes(k));
    if (extra.length > 0) fail(`${where}: unknown field "${extra[0]}"`);
    const [field] = fields;
    if (field === undefined || fields.length > 1)
      return fail(`${where}: give exactly one of "cn", "ou", "san"`);
    return { field, value: stringAt(entry, field, where, fail), role: roleAt(entry, where, fail) };
  });
  const names = new Set<string>();
  const digests = new Set<string>();
  const tokens = listAt(json, 'tokens', fail).map((entry, i) => {
    const where = `tokens[${i}]`;
    const extra = Object.keys(entry).filter((k) => !['name', 'file', 'role'].includes(k));
    if (extra.length > 0) fail(`${where}: unknown field "${extra[0]}"`);
    const name = stringAt(entry, 'name', where, fail);
    if (names.has(name)) fail(`${where}: the name "${name}" is used twice`);
    names.add(name);
    const file = stringAt(entry, 'file', where, fail);
    let token: string;
    try {
      token = readTokenFile(file).trim();
    } catch (err) {
      return fail(`${where}: cannot read the token file ${file}: ${(err as Error).message}`);
    }
    if (token.length < minTokenLength) {
      fail(
        `${where}: the token in ${file} has ${token.length} characters; use at least ` +
          `${minTokenLength} random ones (e.g. openssl rand -hex 32)`,
      );
    }
    const digest = tokenDigest(token);
    if (digests.has(digest.toString('hex'))) fail(`${where}: the same token is listed twice`);
    digests.add(digest.toString('hex'));
    return { name, role: roleAt(entry, where, fail), digest };
  });
  return { certificateRules, tokens };
}

type Fail = (message: string) => never;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function listAt(json: Record<string, unknown>, key: string, fail: Fail): Record<string, unknown>[] {
  const value = json[key] ?? [];
  if (!Array.isArray(value)) return fail(`"${key}" must be a list`);
  return value.map((entry, i) =>
    isObject(entry) ? entry : fail(`${key}[${i}] must be an object`),
  );
}

function stringAt(entry: Record<string, unknown>, key: string, where: string, fail: Fail): string {
  const value = entry[key];
  if (typeof value !== 'string' || value === '')
    return fail(`${where}: "${key}" must be a non-empty string, got ${JSON.stringify(value)}`);
  return value;
}

function roleAt(entry: Record<string, unknown>, where: string, fail: Fail): Role {
  const value = entry['role'];
  if (!isRole(value))
    return fail(
      `${where}: "role" must be one of ${roles.join(', ')}, got ${JSON.stringify(value)}`,
    );
  return value;
}
