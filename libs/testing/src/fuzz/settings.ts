/** How much to fuzz, and from which seed. */
export interface FuzzSettings {
  /** fast-check's seed: the same seed sends the same requests (FUZZ_SEED). */
  seed: number;
  /** Cases per RPC (FUZZ_RUNS). */
  runs: number;
}

export const defaultFuzzSettings: FuzzSettings = { seed: 424242, runs: 1000 };

/**
 * The settings from `FUZZ_SEED` and `FUZZ_RUNS` (non-negative integers), else the defaults. A
 * malformed value throws, naming the variable: a typo must not quietly fuzz something else.
 */
export function fuzzSettings(env: NodeJS.ProcessEnv = process.env): FuzzSettings {
  const read = (name: string, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)))
      throw new Error(`${name}: expected a non-negative integer, got '${raw}'`);
    return Number(raw);
  };
  return {
    seed: read('FUZZ_SEED', defaultFuzzSettings.seed),
    runs: read('FUZZ_RUNS', defaultFuzzSettings.runs),
  };
}
