import fs from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { actionOf, clientActions, errorCodeRule } from './error-rules';
import { ErrorCode } from './generated';

// A code of a server newer than this client, built from parts: the contract's check that sources
// name only codes of the enum (contract.spec.ts) passes over it.
const newerCode = ['PSERVER', 'NEWER', 'CODE'].join('_');

const protoDir = path.join(__dirname, '..', '..', '..', 'proto');

interface Rules {
  actions: Record<string, string>;
  codes: Record<string, { status: string | null; action: string }>;
  statuses: Record<string, { without_code: string; unknown_code: string }>;
}

// Read here as written, not through the generated module, so that a stale one fails.
const rules = JSON.parse(
  fs.readFileSync(path.join(protoDir, 'testdata', 'error_codes.json'), 'utf8'),
) as Rules;

/** gRPC's statuses but OK, by name. */
const grpcStatuses = Object.keys(status).filter(
  (name) => Number.isNaN(Number(name)) && name !== 'OK',
);

/**
 * Each ErrorCode value with the statuses its group heading in errors.proto names (a comment line
 * `// INVALID_ARGUMENT: …` or `// UNAUTHENTICATED and PERMISSION_DENIED: …` opens a group; the
 * clients' group `// Raised by clients, never sent.` names none).
 */
function documentedGroups(): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  let current: string[] | undefined;
  const proto = fs.readFileSync(path.join(protoDir, 'pserver', 'v1', 'errors.proto'), 'utf8');
  for (const line of proto.split('\n')) {
    const heading = /^\s*\/\/ ([A-Z_]+(?: and [A-Z_]+)*): /.exec(line);
    if (heading && heading[1]!.split(' and ').every((name) => grpcStatuses.includes(name))) {
      current = heading[1]!.split(' and ');
    } else if (/^\s*\/\/ Raised by clients, never sent\./.test(line)) {
      current = [];
    }
    const value = /^\s*([A-Z][A-Z0-9_]*) = \d+;/.exec(line);
    if (value && value[1] !== 'ERROR_CODE_UNSPECIFIED') groups.set(value[1]!, current ?? []);
  }
  return groups;
}

describe('the error rules (proto/testdata/error_codes.json)', () => {
  it('have one rule per ErrorCode value, in the enum order', () => {
    const enumCodes = Object.keys(ErrorCode).filter((code) => code !== 'ERROR_CODE_UNSPECIFIED');
    expect(Object.keys(rules.codes)).toEqual(enumCodes);
  });

  it('give every code a server sends one gRPC status, and CLIENT_* codes none', () => {
    const wrong = Object.entries(rules.codes)
      .filter(([code, rule]) =>
        code.startsWith('CLIENT_') ? rule.status !== null : !grpcStatuses.includes(rule.status!),
      )
      .map(([code, rule]) => `${code}: ${rule.status}`);
    expect(wrong).toEqual([]);
  });

  it('give each code the status its group heading in errors.proto names', () => {
    const groups = documentedGroups();
    expect(groups.get('PSERVER_STALE_EPOCH')).toEqual(['ABORTED']);
    expect(groups.get('AUTH_PERMISSION_DENIED')).toEqual(['UNAUTHENTICATED', 'PERMISSION_DENIED']);
    expect(groups.get('CLIENT_CLOSED')).toEqual([]);
    const wrong = Object.entries(rules.codes).flatMap(([code, rule]) => {
      const documented = groups.get(code) ?? [];
      const agree =
        rule.status === null ? documented.length === 0 : documented.includes(rule.status);
      return agree ? [] : [`${code}: ${rule.status}, documented ${documented.join(' or ')}`];
    });
    expect(wrong).toEqual([]);
  });

  it('name every gRPC status but OK, each with an action without a code and with an unknown one', () => {
    expect(Object.keys(rules.statuses).sort()).toEqual([...grpcStatuses].sort());
  });

  it('use only the actions they explain', () => {
    const used = [
      ...Object.values(rules.codes).map((rule) => rule.action),
      ...Object.values(rules.statuses).flatMap((rule) => [rule.without_code, rule.unknown_code]),
    ];
    expect([...new Set(used)].filter((action) => !Object.hasOwn(rules.actions, action))).toEqual(
      [],
    );
    expect(Object.values(rules.actions).filter((meaning) => meaning.trim() === '')).toEqual([]);
    expect(Object.keys(clientActions)).toEqual(Object.keys(rules.actions));
  });
});

describe('actionOf', () => {
  it.each(Object.entries(rules.codes))("%s: the code's action", (code, rule) => {
    expect(actionOf(rule.status ?? 'UNKNOWN', code)).toBe(rule.action);
    expect(errorCodeRule[code as keyof typeof errorCodeRule]).toEqual(rule);
  });

  it.each(Object.entries(rules.statuses))(
    '%s: without a code, and with a newer code',
    (name, rule) => {
      expect(actionOf(name, undefined)).toBe(rule.without_code);
      expect(actionOf(name, newerCode)).toBe(rule.unknown_code);
    },
  );

  it("follows a known code whatever status came with it, and fails a status that is not gRPC's", () => {
    expect(actionOf('INTERNAL', 'PSERVER_OVERLOADED')).toBe('BACK_OFF');
    expect(actionOf('ABORTED', 'PSERVER_UNKNOWN_TENSOR')).toBe('FAIL');
    expect(actionOf('OK', undefined)).toBe('FAIL');
    expect(actionOf('NOT_A_STATUS', newerCode)).toBe('FAIL');
  });
});
