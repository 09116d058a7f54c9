// Prints "N passed, N failed" for every run recorded in tmp/test-results/ (see results-reporter.js).
const fs = require('node:fs');
const path = require('node:path');

const resultsDir = path.join(__dirname, '..', '..', 'tmp', 'test-results');
let passed = 0;
let failed = 0;
let skipped = 0;
const files = fs.existsSync(resultsDir) ? fs.readdirSync(resultsDir) : [];
for (const file of files.filter((f) => f.endsWith('.json'))) {
  const run = JSON.parse(fs.readFileSync(path.join(resultsDir, file), 'utf8'));
  passed += run.passed;
  failed += run.failed + run.brokenSuites;
  skipped += run.skipped;
}
if (skipped > 0) console.log(`${skipped} skipped or todo (a skipped test is a defect)`);
console.log(`${passed} passed, ${failed} failed`);
// A run that executed no test at all is not a pass.
if (passed + failed === 0) process.exitCode = 1;
