import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Enum, Namespace, Root, Service, Type, type ReflectionObject } from 'protobufjs';

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
});
