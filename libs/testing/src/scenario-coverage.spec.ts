import fs from 'node:fs';
import path from 'node:path';
import { workspaceRoot } from '@pserver/local-cluster';
import { scenarioCoverage, scenarioNames } from './scenario-coverage';

describe('scenario coverage', () => {
  const file = { $comment: 'fake', cluster: { pservers: 2 }, placement: {}, tables: {}, tasks: {} };

  it('lists the scenarios of a file: every key but $comment and cluster', () => {
    expect(scenarioNames(file)).toEqual(['placement', 'tables', 'tasks']);
  });

  it('names the scenarios a suite does not run and those it runs that the file does not list', () => {
    expect(scenarioCoverage(scenarioNames(file), ['tasks', 'placement', 'renamed'])).toEqual({
      notRun: ['tables'],
      unlisted: ['renamed'],
    });
  });

  it('finds nothing missing when the suite runs exactly the listed scenarios', () => {
    expect(scenarioCoverage(scenarioNames(file), ['tasks', 'tables', 'placement'])).toEqual({
      notRun: [],
      unlisted: [],
    });
  });

  it('reads the real scenarios.json', () => {
    const real = JSON.parse(
      fs.readFileSync(
        path.join(workspaceRoot(), 'proto', 'testdata', 'conformance', 'scenarios.json'),
        'utf8',
      ),
    );
    expect(scenarioNames(real)).toEqual(expect.arrayContaining(['placement', 'roundTrip']));
    expect(scenarioNames(real)).not.toContain('cluster');
  });
});
