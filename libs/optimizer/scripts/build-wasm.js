#!/usr/bin/env node
// Assembles src/kernels/kernels.wat into src/kernels/wasm-binary.ts (the module's bytes, base64),
// with the npm package `wabt`. The generated file is committed so that building and running need
// no assembler; with --check this fails if it is stale.
const fs = require('node:fs');
const path = require('node:path');

const kernelsDir = path.join(__dirname, '..', 'src', 'kernels');
const watFile = path.join(kernelsDir, 'kernels.wat');
const outFile = path.join(kernelsDir, 'wasm-binary.ts');

/** The module's bytes as a TypeScript constant; `shared` keeps the memory import shared. */
async function binary(wabt, name, shared) {
  const wat = fs.readFileSync(watFile, 'utf8');
  // The same kernels over a memory of their own process (the arena's usual memory), or over a
  // shared one (its fallback): a module imports one or the other.
  const source = shared ? wat : wat.replace('(memory 1 65535 shared)', '(memory 1 65535)');
  if (!shared && source === wat) throw new Error('kernels.wat: no shared memory import to unshare');
  const module = wabt.parseWat('kernels.wat', source, { simd: true, threads: true });
  try {
    module.validate({ simd: true, threads: true });
    const { buffer } = module.toBinary({ write_debug_names: false });
    const lines =
      Buffer.from(buffer)
        .toString('base64')
        .match(/.{1,96}/g) ?? [];
    return (
      `export const ${name} =\n` +
      lines.map((line, i) => `  '${line}'${i === lines.length - 1 ? ';' : ' +'}`).join('\n') +
      '\n'
    );
  } finally {
    module.destroy();
  }
}

async function assemble() {
  const wabt = await require('wabt')();
  return (
    '// Generated from kernels.wat by libs/optimizer/scripts/build-wasm.js; do not edit.\n' +
    '/** The kernels over a shared memory. */\n' +
    (await binary(wabt, 'kernelsWasmBase64', true)) +
    '/** The same kernels over a memory that is not shared. */\n' +
    (await binary(wabt, 'privateKernelsWasmBase64', false))
  );
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
