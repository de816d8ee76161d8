import * as path from 'node:path';
import { formatBytes } from '../../../contract/formatBytes';
import { resolveModelPath, type PullProgress, type PullResult } from '../../../foundations/models/hub/index';
import { PROTOCOL_VERSION, type TrainingEvent } from '../../../contract/protocol';
import type { LoadedConfig } from './trainingConfig';

/**
 * The config's `model.path` as a folder: a folder next to the config, or a Hub repo pulled into
 * the Hugging Face cache. A download is reported as `progress` events of phase `download`
 * (bytes; the editor shows them as a progress notification) and as log lines (a terminal
 * that is not a TTY sees those).
 */
export interface ModelSourceReporting {
  events?: (event: TrainingEvent) => void;
  log?: (line: string) => void;
  signal?: AbortSignal;
}

/** At most this often a progress event while bytes flow (file changes and the end always go out). */
const PROGRESS_INTERVAL_MS = 250;

export function downloadProgressReporter(report: ModelSourceReporting): (progress: PullProgress) => void {
  let last = 0;
  let lastFile: string | undefined;
  let announced = false;
  return (p) => {
    if (!announced && p.fileCount > 0) {
      announced = true;
      report.log?.(
        `${p.repo}: downloading ${p.fileCount} file${p.fileCount === 1 ? '' : 's'} (${formatBytes(p.total)}) into the Hugging Face cache`,
      );
    }
    const now = Date.now();
    if (!p.finished && p.file === lastFile && now - last < PROGRESS_INTERVAL_MS) return;
    last = now;
    lastFile = p.file;
    report.events?.({
      protocol: PROTOCOL_VERSION,
      type: 'progress',
      step: 0,
      phase: 'download',
      done: p.done,
      total: p.total,
      detail: p.file ? `${p.repo} · ${p.file}` : p.repo,
    });
  };
}

export function describePull(result: PullResult, seconds: number): string {
  const where = `${result.repo} at ${result.commit.slice(0, 12)}${result.revision === result.commit ? '' : ` (${result.revision})`}`;
  if (result.downloaded.length === 0)
    return `${where} from the Hugging Face cache${result.offline ? ' (HF_HUB_OFFLINE)' : ''}: ${result.snapshotDir}`;
  return `${where}: downloaded ${result.downloaded.length} file${result.downloaded.length === 1 ? '' : 's'} (${formatBytes(result.downloadedBytes)}) in ${seconds.toFixed(1)} s into ${result.snapshotDir}`;
}

export async function resolveConfigModel(loaded: LoadedConfig, report: ModelSourceReporting = {}): Promise<string> {
  const started = Date.now();
  const model = loaded.config.model;
  return resolveModelPath(model.path, {
    baseDir: path.dirname(loaded.file),
    field: `${loaded.file}: model.path`,
    ...(model.revision !== undefined ? { revision: model.revision } : {}),
    onProgress: downloadProgressReporter(report),
    onPulled: (result) => report.log?.(describePull(result, (Date.now() - started) / 1000)),
    ...(report.signal ? { signal: report.signal } : {}),
  });
}
