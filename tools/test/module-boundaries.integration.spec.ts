import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { workspaceRoot } from '@pserver/testing';

// Lints a source text as a (briefly real) file of the given project, with the repository's real
// ESLint config, and returns the errors of `rule` (the module boundaries by default). Type-aware
// linting needs the file on disk.
function boundaryErrors(
  filePath: string,
  source: string,
  rule = '@nx/enforce-module-boundaries',
): string[] {
  const root = workspaceRoot();
  const file = path.join(root, filePath);
  fs.writeFileSync(file, source);
  try {
    const eslint = path.join(root, 'node_modules', 'eslint', 'bin', 'eslint.js');
    const run = spawnSync(process.execPath, [eslint, '--format', 'json', file], {
      cwd: root,
      encoding: 'utf8',
    });
    if (run.stdout.trim() === '') throw new Error(`eslint printed nothing: ${run.stderr}`);
    const [result] = JSON.parse(run.stdout) as {
      messages: { ruleId: string | null; message: string }[];
    }[];
    const messages = result?.messages ?? [];
    const fatal = messages.find((m) => m.ruleId === null);
    if (fatal) throw new Error(`eslint could not lint ${filePath}: ${fatal.message}`);
    return messages.filter((m) => m.ruleId === rule).map((m) => m.message);
  } finally {
    fs.rmSync(file, { force: true });
  }
}

describe('module boundaries (DESIGN section 7)', () => {
  beforeAll(() => {
    // The rule reads Nx's cached project graph and is skipped without one: compute it first.
    execFileSync(path.join(workspaceRoot(), 'node_modules', '.bin', 'nx'), ['show', 'projects'], {
      cwd: workspaceRoot(),
      env: { ...process.env, NX_DAEMON: 'false' },
      stdio: 'ignore',
    });
  });

  const banned =
    "import { Etcd3 } from 'etcd3';\nimport { Server } from '@grpc/grpc-js';\nexport const used = [Etcd3, Server];\n";

  it('fails lint when a grpc-free, etcd-free lib imports etcd3 or @grpc/grpc-js', () => {
    const errors = boundaryErrors('libs/logging/src/banned-import-probe.ts', banned);
    expect(errors).toEqual([
      expect.stringContaining('is not allowed to import "etcd3"'),
      expect.stringContaining('is not allowed to import "@grpc/grpc-js"'),
    ]);
  });

  it('allows the same imports in the test harness, which talks to etcd', () => {
    expect(boundaryErrors('libs/testing/src/allowed-import-probe.ts', banned)).toEqual([]);
  });

  it('fails lint when an app imports the test harness outside its tests', () => {
    const errors = boundaryErrors(
      'apps/pserver/src/harness-import-probe.ts',
      "import { waitFor } from '@pserver/testing';\nexport const used = waitFor;\n",
    );
    expect(errors).toEqual([expect.stringContaining('can only depend on libs tagged with')]);
  });

  describe("the pserver's folders import only downward", () => {
    const layers = 'import-x/no-restricted-paths';

    it('fails lint when the shard imports the service above it', () => {
      const errors = boundaryErrors(
        'apps/pserver/src/shard/layer-import-probe.ts',
        "import { ParameterService } from '../service/parameter-service';\nexport const used = ParameterService;\n",
        layers,
      );
      expect(errors).toEqual([
        expect.stringContaining('apps/pserver/src/shard may import only itself of the pserver'),
      ]);
    });

    it('fails lint when the service imports replication, which it must not know', () => {
      const errors = boundaryErrors(
        'apps/pserver/src/service/layer-import-probe.ts',
        "import { replay } from '../replication/replay';\nexport const used = replay;\n",
        layers,
      );
      expect(errors).toEqual([
        expect.stringContaining('apps/pserver/src/service may import only shard, consistency'),
      ]);
    });

    it('allows an import downward', () => {
      const source =
        "import { ParameterService } from '../service/parameter-service';\nexport const used = ParameterService;\n";
      expect(
        boundaryErrors('apps/pserver/src/roles/layer-import-probe.ts', source, layers),
      ).toEqual([]);
    });
  });
});
