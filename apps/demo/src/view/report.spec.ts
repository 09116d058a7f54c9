import { renderReport } from './report';

describe('renderReport', () => {
  it('draws the steps and marks each failure, escaping what it prints', () => {
    const html = renderReport({
      title: 'a <demo>',
      settings: { pservers: 3 },
      startedAt: 0,
      finishedAt: 10_000,
      steps: [1, 2, 3].map((k) => ({
        trainer: 't',
        pass: 0,
        loss: 1 / k,
        samples: 32,
        started: k * 1000 - 100,
        t: k * 1000,
      })),
      failures: [
        {
          target: 'pserver',
          victim: 'pserver-1',
          pid: 1,
          index: 1,
          epochBefore: 5,
          killedAt: 4_000,
          resumedAt: 6_500,
        },
      ],
      accuracy: 0.9312,
    });
    expect(html).toContain('<title>a &lt;demo&gt;</title>');
    expect(html).toContain('test accuracy <b>93.1 %</b>');
    expect(html.match(/<circle /g)).toHaveLength(3);
    expect(html.match(/kill -9 pserver-1/g)!.length).toBeGreaterThanOrEqual(3); // two charts, the table
    expect(html).toContain('<td>2.5 s</td>'); // time lost
  });
});
