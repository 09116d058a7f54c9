import fs from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { errorTable, isErrorCode } from './error-table';

const errorsProto = path.join(
  __dirname,
  '..',
  '..',
  '..',
  'proto',
  'pserver',
  'v1',
  'errors.proto',
);

/**
 * Each ErrorCode value with the statuses its group heading in errors.proto names (a comment line
 * `// INVALID_ARGUMENT: …` or `// UNAUTHENTICATED and PERMISSION_DENIED: …` opens a group; the
 * clients' group `// Raised by clients, never sent.` names none).
 */
function documentedGroups(): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of fs.readFileSync(errorsProto, 'utf8').split('\n')) {
    const heading = /^\s*\/\/ ([A-Z_]+(?: and [A-Z_]+)*): /.exec(line);
    if (heading && heading[1]!.split(' and ').every((name) => name in status)) {
      current = heading[1]!.split(' and ');
    } else if (/^\s*\/\/ Raised by clients, never sent\./.test(line)) {
      current = [];
    }
    const value = /^\s*([A-Z][A-Z0-9_]*) = \d+;/.exec(line);
    if (value && value[1] !== 'ERROR_CODE_UNSPECIFIED') groups.set(value[1]!, current ?? []);
  }
  return groups;
}

describe('the error table', () => {
  const groups = documentedGroups();

  it('reads the groups of errors.proto', () => {
    expect(groups.get('PSERVER_STALE_EPOCH')).toEqual(['ABORTED']);
    expect(groups.get('AUTH_PERMISSION_DENIED')).toEqual(['UNAUTHENTICATED', 'PERMISSION_DENIED']);
    expect(groups.get('CLIENT_CLOSED')).toEqual([]);
  });

  it('maps every code a server sends to the status of its group in errors.proto', () => {
    const wrong = [...groups]
      .filter(([code, statuses]) => statuses.length > 0 || !code.startsWith('CLIENT_'))
      .map(([code, statuses]) => {
        const mapped = isErrorCode(code) ? status[errorTable[code]] : 'nothing';
        return statuses.includes(mapped)
          ? undefined
          : `${code}: ${mapped}, documented ${statuses.join(' or ')}`;
      })
      .filter((line) => line !== undefined);
    expect(wrong).toEqual([]);
  });

  it('has no CLIENT_* code (they never travel) and no code outside the enum', () => {
    expect(
      Object.keys(errorTable).filter((code) => !groups.has(code) || code.startsWith('CLIENT_')),
    ).toEqual([]);
  });
});
