import * as path from 'node:path';

/** The repository root, from wherever the harness runs (source under tsx). */
export const repoRoot = path.resolve(__dirname, '..', '..');

/** Ignored folder for everything tests write: logs, screenshots, throwaway profiles. */
export const testOutputDir = path.join(repoRoot, 'test-output');
