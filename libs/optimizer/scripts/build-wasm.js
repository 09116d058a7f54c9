#!/usr/bin/env node
// Assembles src/kernels/kernels.wat into src/kernels/wasm-binary.ts (the module's bytes, base64),
// with the npm package `wabt`. The generated file is committed so that building and running need
// no assembler; with --check this fails if it is stale.
const fs = require('node:fs');
const path = require('node:path');

const kernelsDir = path.join(__dirname, '..', 'src', 'kernels');
const watFile = path.join(kernelsDir, 'kernels.wat');
const outFile = path.join(kernelsDir, 'wasm-binary.ts');

async function assemble() {
  const wabt = await require('wabt')();
  const module = wabt.parseWat('kernels.wat', fs.readFileSync(watFile, 'utf8'), {
    simd: true,
    threads: true,
  });
  try {
    module.validate({ simd: true, threads: true });
    const { buffer } = module.toBinary({ write_debug_names: false });
    const base64 = Buffer.from(buffer).toString('base64');
    const lines = base64.match(/.{1,96}/g) ?? [];
    return (
      '// Generated from kernels.wat by libs/optimizer/scripts/build-wasm.js; do not edit.\n' +
      'export const kernelsWasmBase64 =\n' +
      lines.map((line, i) => `  '${line}'${i === lines.length - 1 ? ';' : ' +'}`).join('\n') +
      '\n'
    );
  } finally {
    module.destroy();
  }
}

assemble().then(
  (source) => {
    if (process.argv.includes('--check')) {
      const current = fs.existsSync(outFile) ? fs.readFileSync(outFile, 'utf8') : '';
      if (current !== source) {
        console.error(
          `${path.relative(process.cwd(), outFile)} is stale: run 'npx nx run optimizer:build-wasm'`,
        );
        process.exitCode = 1;
      }
    } else {
      fs.writeFileSync(outFile, source);
      console.log(`wrote ${path.relative(process.cwd(), outFile)}`);
    }
  },
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  },
);
