// The part of the WebAssembly JavaScript API this library uses. TypeScript declares it only in
// its DOM libraries, which a Node.js project does not load. Imported for its types only.
export {};

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- the global WebAssembly is a namespace
  namespace WebAssembly {
    class Module {
      constructor(bytes: ArrayBufferView | ArrayBuffer);
    }
    class Instance {
      constructor(module: Module, imports?: Record<string, Record<string, unknown>>);
      readonly exports: Record<string, unknown>;
    }
    interface MemoryDescriptor {
      initial: number;
      maximum?: number;
      shared?: boolean;
    }
    class Memory {
      constructor(descriptor: MemoryDescriptor);
      readonly buffer: ArrayBuffer | SharedArrayBuffer;
      grow(delta: number): number;
    }
  }
}
