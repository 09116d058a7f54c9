import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { bundleScript, workspaceRoot, type TrainerProgram } from '@pserver/testing';

export type Language = 'typescript' | 'python' | 'go';

/** One trainer program written in each client's language. */
export interface TrainerSources {
  /** A fixture of libs/client/test/fixtures. */
  typescript: string;
  /** A script of clients/python/tests/fixtures. */
  python: string;
  /** A main package of clients/go/conformance. */
  go: string;
}

/** How to run the trainer of `language`, built first where it needs building. */
export function trainerProgram(language: Language, sources: TrainerSources): TrainerProgram {
  const root = workspaceRoot();
  switch (language) {
    case 'typescript':
      return {
        language,
        command: process.execPath,
        args: [bundleScript(path.join(__dirname, 'fixtures', sources.typescript))],
      };
    case 'python': {
      // Debian's interpreter, the one with python3-grpcio (another python3 may come first on PATH).
      const python = execFileSync('sh', ['-c', 'command -pv python3'], { encoding: 'utf8' });
      return {
        language,
        command: python.trim(),
        args: [path.join(root, 'clients', 'python', 'tests', 'fixtures', sources.python)],
        stackSignal: 'SIGUSR1',
      };
    }
    case 'go': {
      // GOPATH mode against Debian's Go sources, offline, as the Go client's own targets build.
      const binary = path.join(root, 'tmp', 'bundles', sources.go);
      execFileSync(
        path.join(root, 'clients', 'go', 'tools', 'gopath.sh'),
        [
          'go',
          'build',
          '-o',
          binary,
          `github.com/pserver/pserver/clients/go/conformance/${sources.go}`,
        ],
        { stdio: 'inherit' },
      );
      // SIGQUIT: the Go runtime prints every goroutine's stack (and exits).
      return { language, command: binary, args: [], stackSignal: 'SIGQUIT' };
    }
  }
}
