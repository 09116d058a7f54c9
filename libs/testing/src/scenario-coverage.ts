/** The keys of `proto/testdata/conformance/scenarios.json` that are not scenarios. */
const notScenarios = new Set(['$comment', 'cluster']);

/** The scenarios a `scenarios.json` lists: its keys, but `$comment` and `cluster`. */
export function scenarioNames(file: Record<string, unknown>): string[] {
  return Object.keys(file).filter((key) => !notScenarios.has(key));
}

/** What a conformance suite misses of the scenarios file, and what it runs beyond it. */
export interface ScenarioCoverage {
  /** Scenarios the file lists that the suite does not run. */
  notRun: string[];
  /** Scenarios the suite runs that the file does not list. */
  unlisted: string[];
}

/**
 * Compares the scenarios a file lists with those a suite runs, both ways: a suite passes only
 * when both lists are empty, so a scenario added to the file fails every client that does not
 * run it yet, and a scenario renamed or removed there fails every client still running it.
 */
export function scenarioCoverage(
  listed: readonly string[],
  run: readonly string[],
): ScenarioCoverage {
  const runSet = new Set(run);
  const listedSet = new Set(listed);
  return {
    notRun: listed.filter((name) => !runSet.has(name)).sort(),
    unlisted: [...runSet].filter((name) => !listedSet.has(name)).sort(),
  };
}
