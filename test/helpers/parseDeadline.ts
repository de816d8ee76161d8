import * as path from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * Runs one of test/helpers/parsers.ts's readers on each of `inputs` in a worker thread and
 * resolves with how long each call took inside the worker, in milliseconds. A reader that is
 * still busy after `giveUpMs` (wall time, the worker's start included) is stopped and the promise
 * rejects: a super-linear reader fails its test in seconds instead of holding the test run for
 * hours, which a synchronous call in the test's own thread could not prevent.
 */
export function parseTimes(parser: string, inputs: readonly string[], giveUpMs = 20_000): Promise<number[]> {
  const script = `
    require(${JSON.stringify(require.resolve('tsx/cjs'))});
    const { parentPort, workerData } = require('node:worker_threads');
    const { PARSERS } = require(${JSON.stringify(path.join(__dirname, 'parsers.ts'))});
    const parse = PARSERS[workerData.parser];
    parse('warm up');
    parentPort.postMessage(workerData.inputs.map((input) => {
      const started = performance.now();
      parse(input);
      return performance.now() - started;
    }));`;
  const worker = new Worker(script, { eval: true, workerData: { parser, inputs } });
  return new Promise((resolve, reject) => {
    const giveUp = setTimeout(() => {
      void worker.terminate();
      reject(new Error(`${parser}: still parsing after ${giveUpMs} ms`));
    }, giveUpMs);
    worker.once('message', (ms: number[]) => {
      clearTimeout(giveUp);
      void worker.terminate();
      resolve(ms);
    });
    worker.once('error', (error) => {
      clearTimeout(giveUp);
      reject(error);
    });
  });
}
