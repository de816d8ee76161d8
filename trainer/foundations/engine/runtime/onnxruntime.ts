import * as path from 'node:path';

export type OnnxRuntime = typeof import('onnxruntime-node');

export interface LoadedOnnxRuntime {
  ort: OnnxRuntime;
  version: string;
  /** The folder of the installed onnxruntime-node package. */
  packageDir: string;
}

/**
 * Load onnxruntime-node lazily, so that a missing or broken native binary becomes a report
 * entry instead of a crash at start-up.
 */
export function loadOnnxRuntime(): LoadedOnnxRuntime | { error: string } {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const ort = require('onnxruntime-node') as OnnxRuntime;
    const packageDir = path.dirname(require.resolve('onnxruntime-node/package.json'));
    return { ort, version: ort.env.versions.node ?? 'unknown', packageDir };
  } catch (error) {
    return {
      error:
        `onnxruntime-node could not be loaded: ${(error as Error).message}. ` +
        'Reinstall the dependencies (npm install); onnxruntime-node ships binaries for linux x64/arm64, win32 x64/arm64 and darwin arm64.',
    };
  }
}

/** Where onnxruntime-node keeps its native libraries for this platform. */
export function nativeBinaryDir(packageDir: string): string {
  return path.join(packageDir, 'bin', 'napi-v6', process.platform, process.arch);
}
