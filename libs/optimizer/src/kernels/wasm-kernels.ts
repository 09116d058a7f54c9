import type {} from './webassembly-globals';
import { kernelsWasmBase64 } from './wasm-binary';

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

let compiled: WebAssembly.Module | undefined | null;

/** The compiled module, or null where WebAssembly SIMD or shared memory is not available. */
export function kernelsModule(): WebAssembly.Module | null {
  if (compiled === undefined) {
    try {
      compiled = new WebAssembly.Module(Buffer.from(kernelsWasmBase64, 'base64'));
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

/** Instantiates the kernels over `memory` (a shared memory of at most `maxMemoryPages`). */
export function instantiateKernels(
  module: WebAssembly.Module,
  memory: WebAssembly.Memory,
): WasmKernels {
  const instance = new WebAssembly.Instance(module, { env: { memory } });
  return instance.exports as unknown as WasmKernels;
}
