import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Enum, Namespace, Root, Service, Type, type ReflectionObject } from 'protobufjs';
import { ErrorCode } from './generated';

const workspace = path.join(__dirname, '..', '..', '..');
const protoDir = path.join(workspace, 'proto');
const protoFiles = fs
  .readdirSync(path.join(protoDir, 'pserver', 'v1'))
  .filter((f) => f.endsWith('.proto'))
  .map((f) => `pserver/v1/${f}`);

describe('the .proto contract', () => {
  it('compiles with protoc, without a warning', () => {
    const which = spawnSync('sh', ['-c', 'command -v protoc'], { encoding: 'utf8' });
    if (which.status !== 0) {
      throw new Error(
        "protoc is not on PATH: install it with 'sudo apt-get install protobuf-compiler' (npm test does so as root)",
      );
    }
    const run = spawnSync(
      'protoc',
      ['-I', protoDir, '--descriptor_set_out=/dev/null', ...protoFiles],
      {
        encoding: 'utf8',
      },
    );
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it('documents every message, field, enum, enum value, service and method', () => {
    const root = new Root();
    root.resolvePath = (_origin, target) => path.join(protoDir, target);
    root.loadSync(protoFiles, { alternateCommentMode: true });
    const undocumented: string[] = [];
    const visit = (object: ReflectionObject): void => {
      const documented = (comment: string | null | undefined): boolean =>
        (comment ?? '').trim() !== '';
      if (object instanceof Type) {
        if (!documented(object.comment)) undocumented.push(object.fullName);
        for (const field of object.fieldsArray) {
          if (!documented(field.comment)) undocumented.push(field.fullName);
        }
        for (const oneof of object.oneofsArray) {
          // proto3 `optional` fields are one-member oneofs the compiler makes up: nothing to document.
          if (!oneof.name.startsWith('_') && !documented(oneof.comment))
            undocumented.push(oneof.fullName);
        }
      } else if (object instanceof Enum) {
        if (!documented(object.comment)) undocumented.push(object.fullName);
        for (const value of Object.keys(object.values)) {
          if (!documented(object.comments[value])) undocumented.push(`${object.fullName}.${value}`);
        }
      } else if (object instanceof Service) {
        if (!documented(object.comment)) undocumented.push(object.fullName);
        for (const method of object.methodsArray) {
          if (!documented(method.comment)) undocumented.push(method.fullName);
        }
      }
      if (object instanceof Namespace) object.nestedArray.forEach(visit);
    };
    visit(root);
    expect(undocumented).toEqual([]);
  });

  it('matches the committed generated TypeScript (run `npx nx run proto:generate` after a change)', () => {
    const generate = path.join(workspace, 'libs', 'proto', 'scripts', 'generate.js');
    expect(() =>
      execFileSync(process.execPath, [generate, '--check'], { stdio: 'pipe' }),
    ).not.toThrow();
  });

  describe('error codes', () => {
    const codeLike = /\b(?:PSERVER|MASTER|CHECKPOINT|OPTIMIZER|AUTH|RPC|CLIENT)_[A-Z0-9_]+\b/g;
    const known = (code: string): boolean => Object.hasOwn(ErrorCode, code);

    it('names only ErrorCode values in proto comments and proto/README.md', () => {
      const unknown: string[] = [];
      const files = [
        ...protoFiles.map((f) => path.join(protoDir, f)),
        path.join(protoDir, 'README.md'),
      ];
      for (const file of files) {
        const lines = fs.readFileSync(file, 'utf8').split('\n');
        lines.forEach((line, i) => {
          const text = file.endsWith('.proto') ? (line.split('//')[1] ?? '') : line;
          for (const [code] of text.matchAll(codeLike)) {
            if (!known(code)) unknown.push(`${path.relative(workspace, file)}:${i + 1} ${code}`);
          }
        });
      }
      expect(unknown).toEqual([]);
    });

    it('throws and compares only ErrorCode values in the TypeScript sources', () => {
      // Environment variable names (PSERVER_PORT, …) are declared in the apps' config.ts only.
      const envTables = new Set(['apps/pserver/src/config.ts', 'apps/master/src/config.ts']);
      const unknown: string[] = [];
      const visit = (dir: string): void => {
        for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
          const full = path.join(dir, entry.name);
          const relative = path.relative(workspace, full);
          if (entry.isDirectory()) {
            if (!['node_modules', 'generated', 'dist'].includes(entry.name)) visit(full);
          } else if (entry.name.endsWith('.ts') && !envTables.has(relative)) {
            const text = fs.readFileSync(full, 'utf8');
            for (const [, code] of text.matchAll(
              /'((?:PSERVER|MASTER|CHECKPOINT|OPTIMIZER|AUTH|RPC|CLIENT)_[A-Z0-9_]+)'/g,
            )) {
              if (!known(code!)) unknown.push(`${relative} ${code}`);
            }
          }
        }
      };
      visit(path.join(workspace, 'apps'));
      visit(path.join(workspace, 'libs'));
      expect(unknown).toEqual([]);
    });

    it('catches a code that is not in the enum', () => {
      // Built from parts, so that this file does not name it.
      const stray = ['PSERVER', 'SESSION', 'EXPIRED'].join('_');
      expect([...`a ${stray} here`.matchAll(codeLike)].map(([c]) => c)).toEqual([stray]);
      expect(known(stray)).toBe(false);
      expect(known('MASTER_SESSION_EXPIRED')).toBe(true);
    });
  });
});
