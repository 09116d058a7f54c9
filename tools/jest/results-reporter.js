// A Jest reporter that writes the counts of one run to tmp/test-results/, one file per run.
// .ci/run adds them up, so the closing "N passed, N failed" line counts every test that ran,
// whichever Nx project and whichever jest config ran it.
const fs = require('node:fs');
const path = require('node:path');

const resultsDir = path.join(__dirname, '..', '..', 'tmp', 'test-results');

class ResultsReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
  }

  onRunComplete(_contexts, results) {
    const project = path.relative(path.join(__dirname, '..', '..'), this.rootDir) || '.';
    const summary = {
      project,
      passed: results.numPassedTests,
      failed: results.numFailedTests,
      // A suite that could not run (a compile error, a throw at load time) has no failed test,
      // but it is a failure all the same.
      brokenSuites: results.numRuntimeErrorTestSuites,
      skipped: results.numPendingTests + results.numTodoTests,
    };
    fs.mkdirSync(resultsDir, { recursive: true });
    const file = `${project.replace(/[\\/]/g, '_')}-${process.pid}-${Date.now()}.json`;
    fs.writeFileSync(path.join(resultsDir, file), JSON.stringify(summary) + '\n');
  }
}

module.exports = ResultsReporter;
