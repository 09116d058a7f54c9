// Runs `go test -json` (in the GOPATH that tools/gopath.sh sets up), prints one line per test and
// the output of failed ones, and writes the counts to tmp/test-results/ like the Jest reporter
// (tools/jest/results-reporter.js), so `bash .ci/run` counts Go tests too.
//
//   node clients/go/tools/go-test.js <name> [go test arguments…]
//
// Counts are of top-level tests and subtests alike (every pass/fail/skip event that names a
// test). A package that failed without a failed test (a build error, a panic at init) counts as
// a broken suite. Exits non-zero if anything failed or nothing ran.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');

const root = path.join(__dirname, '..', '..', '..');
const [name = 'go', ...args] = process.argv.slice(2);
const counts = { passed: 0, failed: 0, brokenSuites: 0, skipped: 0 };
const output = new Map(); // "pkg test" → lines, for failed tests
const failedTests = new Map(); // pkg → number of failed tests

const child = spawn(path.join(__dirname, 'gopath.sh'), ['go', 'test', '-json', ...args], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const lines = readline.createInterface({ input: child.stdout, crlfDelay: Infinity });
lines.on('line', (line) => {
  let event;
  try {
    event = JSON.parse(line);
  } catch {
    process.stdout.write(line + '\n'); // build errors and the like
    return;
  }
  const key = `${event.Package} ${event.Test ?? ''}`;
  if (event.Action === 'output') {
    if (!output.has(key)) output.set(key, []);
    output.get(key).push(event.Output);
    return;
  }
  const short = (event.Package ?? '').replace('github.com/pserver/pserver/clients/go/', '');
  const time = event.Elapsed === undefined ? '' : ` (${event.Elapsed}s)`;
  if (event.Test) {
    if (event.Action === 'pass') counts.passed++;
    else if (event.Action === 'skip') counts.skipped++;
    else if (event.Action === 'fail') {
      counts.failed++;
      failedTests.set(event.Package, (failedTests.get(event.Package) ?? 0) + 1);
    } else return;
    console.log(`${event.Action.toUpperCase().padEnd(4)} ${short} ${event.Test}${time}`);
    if (event.Action === 'fail') process.stdout.write((output.get(key) ?? []).join(''));
    output.delete(key);
    return;
  }
  if (event.Action === 'fail' && !failedTests.get(event.Package)) {
    counts.brokenSuites++;
    console.log(`BROKEN ${short}`);
    process.stdout.write((output.get(key) ?? []).join(''));
  } else if (event.Action === 'pass' || event.Action === 'fail' || event.Action === 'skip') {
    console.log(`${event.Action === 'pass' ? 'ok  ' : event.Action} ${short}${time}`);
  }
});

child.on('close', (code) => {
  // go test failing with no JSON failure at all (say, a bad flag) is a broken suite too.
  if (code !== 0 && counts.failed === 0 && counts.brokenSuites === 0) counts.brokenSuites++;
  const summary = { project: 'clients/go', ...counts };
  const dir = path.join(root, 'tmp', 'test-results');
  fs.mkdirSync(dir, { recursive: true });
  const file = `clients_go-${name}-${process.pid}-${Date.now()}.json`;
  fs.writeFileSync(path.join(dir, file), JSON.stringify(summary) + '\n');
  console.log(
    `${counts.passed} passed, ${counts.failed} failed, ${counts.brokenSuites} broken, ${counts.skipped} skipped`,
  );
  const bad = counts.failed + counts.brokenSuites + counts.skipped > 0 || counts.passed === 0;
  process.exit(code !== 0 || bad ? 1 : 0);
});
