// One trainer of the consistency benchmark (./main.ts): `steps` steps of reading the model,
// "computing" for a jittered time (a sleep: the benchmark measures the server's consistency
// mode, not arithmetic), and pushing a gradient of the whole model. Prints one JSON line: its
// steps, its time in all, and its time in reads (a parked read is the wait at the barrier).
//   node trainer.js <address,...> <trainer id> <steps> <elements> <compute ms>
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '@pserver/client';

const [addresses = '', idArg = '1', stepsArg = '1', elementsArg = '1', computeArg = '0'] =
  process.argv.slice(2);
const trainerId = Number(idArg);
const elements = Number(elementsArg);

/** A compute time of 0.5–1.5 × the mean, from a generator seeded by the trainer id. */
function computeTimes(meanMs: number): () => number {
  let state = trainerId * 0x9e3779b1;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return meanMs * (0.5 + state / 2 ** 32);
  };
}

async function main(): Promise<void> {
  const client = await connect({
    pservers: addresses.split(','),
    trainerId,
    initializer: trainerId === 1,
  });
  await client.initParams(
    { w: new Float32Array(elements) },
    { sgd: {}, learningRate: { base: 0.01 } },
  );
  const compute = computeTimes(Number(computeArg));
  const gradient = new Float32Array(elements).fill(1e-3);
  let readMs = 0;
  const started = performance.now();
  for (let k = 0; k < Number(stepsArg); k++) {
    await client.step(async (ctx) => {
      const reading = performance.now();
      await ctx.getParams(['w'], Float32Array);
      readMs += performance.now() - reading;
      await sleep(compute());
      await ctx.sendGrads({ w: gradient });
    });
  }
  const totalMs = performance.now() - started;
  console.log(JSON.stringify({ trainerId, steps: Number(stepsArg), totalMs, readMs }));
  await client.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
