import * as fs from 'node:fs';
import type { Worker } from 'node:worker_threads';
import * as path from 'node:path';

/**
 * A worker script of this folder: the bundle `bundled` next to the CLI bundle when built
 * (.build/build.mjs), the TypeScript source `source` under tsx (tests, `npm run` from the sources).
 */
export function workerEntry(bundled: string, source: string): { script: string; eval: boolean } {
  const bundle = path.join(__dirname, bundled);
  if (__filename.endsWith('.js') && fs.existsSync(bundle)) return { script: bundle, eval: false };
  const sourceFile = path.join(__dirname, source);
  return {
    script: `require(${JSON.stringify(require.resolve('tsx/cjs'))}); require(${JSON.stringify(sourceFile)});`,
    eval: true,
  };
}

/** How long a worker has to answer a ping before it counts as stuck in a call (a synchronous loop). */
export const PING_GRACE_MS = 1_000;

/**
 * Whether `worker` answers a ping within PING_GRACE_MS: it posts `{ type: 'ping', id }` and the
 * host's message handler calls `pings.get(id)` when the pong comes back.
 */
export function answersPing(worker: Worker, pings: Map<number, () => void>, id: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => {
      pings.delete(id);
      resolve(false);
    }, PING_GRACE_MS);
    pings.set(id, () => {
      clearTimeout(timer);
      resolve(true);
    });
    worker.postMessage({ type: 'ping', id });
  });
}
