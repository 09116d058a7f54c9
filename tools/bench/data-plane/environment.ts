/**
 * What the data-plane benchmark needs from the machine, checked before anything starts (naming
 * the Debian packages that are missing), and the machine it measures on.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The toolchain the run uses, with the versions printed at the top. */
export interface Toolchain {
  /** Debian's python3 (the system default PATH's), which python3-* packages install into. */
  python: string;
  versions: Record<string, string>;
}

export interface Needs {
  go: boolean;
  pserver: boolean;
  tls: boolean;
}

/** Something the run cannot do without; the message says what to install or build. */
export class PrerequisiteError extends Error {
  readonly code = 'BENCH_PREREQUISITE_MISSING';
}

const pythonModules: [module: string, debianPackage: string][] = [
  ['grpc', 'python3-grpcio'],
  ['numpy', 'python3-numpy'],
  ['google.protobuf', 'python3-protobuf'],
];

/** Debian's Go sources the Go reference server builds against offline (GOPATH mode). */
const goSourcePackages: [debianPackage: string, sourceDir: string][] = [
  ['golang-google-grpc-dev', 'google.golang.org/grpc'],
  ['golang-google-protobuf-dev', 'google.golang.org/protobuf'],
  // Not the 1-3 package: a grpc server built with it crashes on its first request.
  ['golang-github-golang-protobuf-1-5-dev', 'github.com/golang/protobuf'],
];

function run(command: string, args: string[]): { ok: boolean; stdout: string } {
  const result = spawnSync(command, args, { encoding: 'utf8' });
  return { ok: result.status === 0, stdout: (result.stdout ?? '').trim() };
}

function systemPython(): string | undefined {
  const found = run('sh', ['-c', 'command -pv python3']);
  return found.ok && found.stdout ? found.stdout : undefined;
}

function pythonVersions(python: string): Record<string, string | null> {
  const script = [
    'import importlib, json, sys',
    'out = {"python": sys.version.split()[0]}',
    `for m in ${JSON.stringify(pythonModules.map(([m]) => m))}:`,
    '    try:',
    '        out[m] = importlib.import_module(m).__version__',
    '    except ImportError:',
    '        out[m] = None',
    'print(json.dumps(out))',
  ].join('\n');
  const result = run(python, ['-c', script]);
  return result.ok ? (JSON.parse(result.stdout) as Record<string, string | null>) : {};
}

function debianPackageInstalled(name: string, sourceDir: string): boolean {
  const dpkg = spawnSync('dpkg', ['-s', name], { stdio: 'ignore' });
  if (dpkg.error === undefined) return dpkg.status === 0;
  return fs.existsSync(path.join('/usr/share/gocode/src', sourceDir)); // not Debian: the tree
}

/**
 * Checks everything the run needs and returns the toolchain; throws a PrerequisiteError naming
 * every missing Debian package (or the build to run) at once.
 */
export function checkPrerequisites(root: string, needs: Needs): Toolchain {
  const missing: string[] = [];
  const problems: string[] = [];
  const versions: Record<string, string> = { node: process.version.replace(/^v/, '') };

  const python = systemPython();
  if (python === undefined) {
    missing.push('python3', ...pythonModules.map(([, pkg]) => pkg));
  } else {
    const found = pythonVersions(python);
    for (const [module, pkg] of pythonModules) {
      const version = found[module];
      if (typeof version === 'string') versions[module === 'grpc' ? 'grpcio' : module] = version;
      else missing.push(pkg);
    }
    versions.python = found.python ?? 'unknown';
  }
  if (needs.go) {
    const go = run('go', ['version']);
    if (go.ok) versions.go = go.stdout.replace(/^go version go/, '');
    else missing.push('golang-go');
    for (const [pkg, dir] of goSourcePackages) {
      if (!debianPackageInstalled(pkg, dir)) missing.push(pkg);
    }
  }
  if (needs.tls && !run('openssl', ['version']).ok) missing.push('openssl');
  if (!fs.existsSync(path.join(root, 'clients/python/pserver_client/_proto/pserver/v1'))) {
    problems.push(
      'the Python stubs clients/python/pserver_client/_proto are missing: npx nx run client-python:generate',
    );
  }
  if (needs.pserver && !fs.existsSync(path.join(root, 'dist/apps/pserver/main.js'))) {
    problems.push('dist/apps/pserver/main.js is missing: npx nx run-many -t build -p pserver');
  }
  if (missing.length > 0) {
    problems.unshift(
      `missing Debian packages: ${missing.join(' ')}\n  install them with: apt-get install -y --no-install-recommends ${missing.join(' ')}`,
    );
  }
  if (problems.length > 0) throw new PrerequisiteError(problems.join('\n'));
  return { python: python!, versions };
}

/** One line about the machine and the toolchain, printed at the top of a run. */
export function describeMachine(root: string, toolchain: Toolchain): string {
  const cpuinfo = fs.existsSync('/proc/cpuinfo') ? fs.readFileSync('/proc/cpuinfo', 'utf8') : '';
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  const memGiB = (os.totalmem() / 2 ** 30).toFixed(0);
  const commit = run('git', ['-C', root, 'describe', '--always', '--dirty']);
  const versions = Object.entries(toolchain.versions)
    .map(([name, version]) => `${name} ${version}`)
    .join(', ');
  return [
    `machine: ${model}, ${os.cpus().length} cores, ${memGiB} GiB, Linux ${os.release()}`,
    `toolchain: ${versions}`,
    `pserver: ${commit.ok ? commit.stdout : 'unknown commit'} (dist/apps/pserver/main.js)`,
  ].join('\n');
}
