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
          takenOverAt: 5_000,
          takenOverBy: 'pserver-3',
          epochAfter: 9,
          resumedAt: 6_500,
        },
      ],
      headline: 'test accuracy <b>93.1 %</b>',
      lossLabel: 'cross-entropy',
    });
    expect(html).toContain('<title>a &lt;demo&gt;</title>');
    expect(html).toContain('test accuracy <b>93.1 %</b>');
    expect(html.match(/<circle /g)).toHaveLength(3);
    expect(html.match(/kill -9 pserver-1/g)!.length).toBeGreaterThanOrEqual(3); // two charts, the table
    expect(html).toContain('<td>2.5 s</td>'); // time lost
    // A lease epoch, not a training epoch.
    expect(html).toContain('kill -9 pserver-1 (shard 1, lease epoch 5)');
    expect(html).toContain('pserver-3 after 1.0 s, lease epoch 9');
    expect(html).not.toMatch(/[^e] epoch/);
  });

  it('draws a curve after loss and throughput, with its reference level', () => {
    const html = renderReport({
      title: 'curves',
      settings: {},
      startedAt: 0,
      finishedAt: 10_000,
      steps: [{ trainer: 't', pass: 0, loss: 0.5, samples: 256, started: 900, t: 1_000 }],
      failures: [],
      headline: 'held-out AUC <b>0.780</b>',
      lossLabel: 'log-loss',
      curves: [
        {
          title: 'Held-out AUC',
          yLabel: 'AUC',
          points: [
            [2_000, 0.6],
            [6_000, 0.75],
            [9_000, 0.78],
          ],
          reference: { value: 0.85, label: 'optimum 0.850' },
        },
      ],
    });
    const charts = html.split('<svg').slice(1);
    expect(charts).toHaveLength(3);
    expect(html.indexOf('<h2>Held-out AUC</h2>')).toBeGreaterThan(html.indexOf('<h2>Throughput'));
    expect(charts[2]!.match(/<circle /g)).toHaveLength(3);
    expect(charts[2]).toContain('stroke-dasharray="6 4"');
    expect(charts[2]).toContain('>optimum 0.850</text>');
    expect(html).toContain('held-out AUC <b>0.780</b>');
  });

  it('puts the axis ticks at round numbers', () => {
    const html = renderReport({
      title: 'ticks',
      settings: {},
      startedAt: 0,
      finishedAt: 16_300,
      steps: [
        { trainer: 't', pass: 0, loss: 2.3, samples: 1_279, started: 1_000, t: 1_100 },
        { trainer: 't', pass: 0, loss: 0.4, samples: 600, started: 9_000, t: 9_100 },
      ],
      failures: [],
      headline: 'test accuracy not measured',
      lossLabel: 'cross-entropy',
    });
    const labels = (svg: string, anchor: 'end' | 'middle'): string[] =>
      [...svg.matchAll(new RegExp(`text-anchor="${anchor}">([^<]+)</text>`, 'g'))].map(
        (m) => m[1]!,
      );
    const [loss, throughput] = html.split('<svg').slice(1);
    expect(labels(loss!, 'end')).toEqual(['0', '1', '2', '3']);
    expect(labels(throughput!, 'end')).toEqual(['0', '500', '1,000', '1,500']);
    for (const svg of [loss!, throughput!])
      expect(labels(svg, 'middle').filter((l) => l.endsWith(' s'))).toEqual([
        '0 s',
        '5 s',
        '10 s',
        '15 s',
      ]);
  });

  it('marks the growth on the charts and gives its times from the ask, and its audit', () => {
    const html = renderReport({
      title: 'growth',
      settings: { shards: '3 → 4 (grown live)', replicas: 0 },
      startedAt: 0,
      finishedAt: 20_000,
      steps: [{ trainer: 't', pass: 0, loss: 0.5, samples: 32, started: 900, t: 1_000 }],
      failures: [],
      growth: {
        from: 3,
        to: 4,
        started: [{ name: 'pserver-4', pid: 9 }],
        askedOf: 'master-0',
        askedAt: 5_000,
        handedBackAt: 5_300,
        servedAt: 6_400,
        restoreMs: 41,
        resumedAt: 6_600,
        audit: { acknowledged: 212, lost: 0, doubled: 0 },
      },
      audit: { acknowledged: 600, lost: 0, doubled: 0 },
      headline: 'test accuracy <b>92.0 %</b>',
      lossLabel: 'cross-entropy',
    });
    // A blue span on the loss and the throughput charts.
    expect(html.match(/>3 → 4 shards<\/text>/g)).toHaveLength(2);
    expect(html).toContain('<h2>Live growth: 3 → 4 shards</h2>');
    expect(html).toContain('started pserver-4');
    expect(html).toContain(
      '<td>5.0 s</td><td>master-0</td><td>0.3 s</td><td>1.4 s (each share restored in 41 ms or less)</td><td>1.6 s</td>' +
        '<td><b>0</b> of 212 lost · 0 applied twice</td>',
    );
    expect(html).toContain('a growth hands every shard over in a final checkpoint: it loses none');
    expect(html).toContain('<td colspan="4">none</td></tr>');
  });
});
