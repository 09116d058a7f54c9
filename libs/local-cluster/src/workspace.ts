import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

let root: string | undefined;

/** The repository root: the nearest folder above this file that holds `nx.json`. */
export function workspaceRoot(): string {
  if (root) return root;
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'nx.json'))) return (root = dir);
    if (path.dirname(dir) === dir) throw new Error(`no nx.json above ${__dirname}`);
  }
}

/**
 * The runnable bundle of an app (`nx build <app>` writes `dist/apps/<app>/main.js`). Integration
 * targets depend on the builds they need; run from elsewhere, build first.
 */
export function appBundle(app: string): string {
  const bundle = path.join(workspaceRoot(), 'dist', 'apps', app, 'main.js');
  if (!fs.existsSync(bundle)) {
    throw new Error(`${bundle} is missing: build it first with 'npx nx build ${app}'`);
  }
  return bundle;
}

/**
 * Bundles a TypeScript entry point (a test fixture run as its own process) with
 * `tools/bundle.js` into `tmp/bundles/`, and returns the bundle's path.
 */
export function bundleScript(entry: string): string {
  const root = workspaceRoot();
  const name = path.relative(root, entry).replace(/[\\/]/g, '-').replace(/\.ts$/, '.js');
  const out = path.join(root, 'tmp', 'bundles', name);
  execFileSync(process.execPath, [path.join(root, 'tools', 'bundle.js'), entry, out], {
    stdio: 'inherit',
  });
  return out;
}
