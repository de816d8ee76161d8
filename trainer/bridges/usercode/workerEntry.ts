import * as fs from 'node:fs';
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
