#!/usr/bin/env node
// Bundles a TypeScript entry point (a benchmark, a tool) into one runnable file: workspace libraries (@pserver/*) are
// bundled in, npm packages stay in node_modules (some, like grpc-health-check, read files next to
// themselves at run time).
//   node tools/bundle.js <entry.ts> <out.js>
const esbuild = require('esbuild');

const [entry, outfile] = process.argv.slice(2);
esbuild
  .build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    logLevel: 'warning',
    plugins: [
      {
        name: 'npm-packages-external',
        setup(build) {
          build.onResolve({ filter: /^[^./]/ }, (args) =>
            args.path.startsWith('@pserver/') ? undefined : { path: args.path, external: true },
          );
        },
      },
    ],
  })
  .catch(() => process.exit(1));
