// Shared by every project's jest config. Each run also writes its counts to tmp/test-results/
// so that .ci/run can print one "N passed, N failed" line for the whole suite.
const path = require('node:path');

module.exports = {
  testEnvironment: 'node',
  // Type errors are caught by each project's typecheck target; tests only transpile (isolatedModules).
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }] },
  moduleFileExtensions: ['ts', 'js', 'json'],
  reporters: ['default', path.join(__dirname, 'tools/jest/results-reporter.js')],
  // Removes the temporary directories the tests made (a test file's `process` never emits 'exit').
  globalTeardown: path.join(__dirname, 'tools/jest/remove-temp-dirs.js'),
};
