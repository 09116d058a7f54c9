import type {} from './webassembly-globals';
import { kernelsWasmBase64, privateKernelsWasmBase64 } from './wasm-binary';

/**
 * The exports of kernels.wat. Pointers are byte offsets in the memory; n4 counts 4-float vectors,
 * a multiple of 4 (arrays are padded to 16 floats). The update kernels take the gradient as it is;
 * `clip` writes the clipped one first when clipping is on.
 */
export interface WasmKernels {
  nonFinite(g: number, n4: number): number;
  sumSquares(g: number, n4: number, clipValue: number): number;
  clip(x: number, g: number, n4: number, clipValue: number, scale: number): void;
  sgd(p: number, g: number, n4: number, lr: number, wd: number): void;
  sgdMomentum(
    p: number,
    g: number,
    v: number,
    n4: number,
    lr: number,
    mu: number,
    wd: number,
  ): void;
  sgdNesterov(
    p: number,
    g: number,
    v: number,
    n4: number,
    lr: number,
    mu: number,
    wd: number,
  ): void;
  adam(
    p: number,
    g: number,
    m: number,
    v: number,
    n4: number,
    lrT: number,
    b1: number,
    omb1: number,
    b2: number,
    omb2: number,
    epsHat: number,
    wd: number,
    decay: number,
  ): void;
  adagrad(p: number, g: number, a: number, n4: number, lr: number, eps: number, wd: number): void;
  adadelta(
    p: number,
    g: number,
    a: number,
    da: number,
    n4: number,
    lr: number,
    rho: number,
    omr: number,
    eps: number,
    wd: number,
  ): void;
  rmsprop(
    p: number,
    g: number,
    sq: number,
    c: number,
    b: number,
    n4: number,
    lr: number,
    alpha: number,
    oma: number,
    eps: number,
    mu: number,
    wd: number,
  ): void;
}

/** 65,535 pages: the kernels' `pointer + 16·n4` never wraps past 2^32. */
export const maxMemoryPages = 65_535;
export const pageBytes = 65_536;

const compiled = new Map<'shared' | 'private', WebAssembly.Module | null>();

/**
 * The compiled module over a shared or a private (not shared) memory, or null where WebAssembly
 * SIMD (or, for 'shared', shared memory) is not available.
 */
export function kernelsModule(memory: 'shared' | 'private' = 'shared'): WebAssembly.Module | null {
  let module = compiled.get(memory);
  if (module === undefined) {
    const bytes = memory === 'shared' ? kernelsWasmBase64 : privateKernelsWasmBase64;
    try {
      module = new WebAssembly.Module(Buffer.from(bytes, 'base64'));
    } catch {
      module = null;
    }
    compiled.set(memory, module);
  }
  return module;
}

/** Instantiates the kernels over `memory` (of at most `maxMemoryPages`, shared as `module` wants). */
export function instantiateKernels(
  module: WebAssembly.Module,
  memory: WebAssembly.Memory,
): WasmKernels {
  const instance = new WebAssembly.Instance(module, { env: { memory } });
  return instance.exports as unknown as WasmKernels;
}
