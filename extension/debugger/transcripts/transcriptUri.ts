/**
 * The `rollout:` URIs of transcripts: the run directory, then the step and the trajectory, so
 * a URI alone says what to show (and a hover over a stack frame reads like a path):
 *
 *   rollout:/work/ws/.rollout/runs/2026-11-30-a/step-000001/trajectory-3.rollout.txt
 *
 * Stack frames carry it as their source path (VS Code treats a path with a scheme as a URI);
 * the extension's TextDocumentContentProvider serves it. No vscode import: the adapter core
 * builds these outside VS Code too.
 */
import { stepFileName } from '../../../trainer/contract/protocol/runStore';

export const TRANSCRIPT_SCHEME = 'rollout';

/**
 * Custom DAP event, live: a step's transcripts changed (before a stop, when the step is
 * recorded), or, without `step`, every transcript of the run (its trainer has exited). Open
 * ones are read again.
 */
export const TRANSCRIPTS_CHANGED_EVENT = 'rolloutTranscriptsChanged';

export interface TranscriptsChangedBody {
  runDirectory: string;
  step?: number;
}

export interface TranscriptAddress {
  runDirectory: string;
  step: number;
  /** The trajectory's `index` in its step. */
  index: number;
}

export function transcriptFileName(step: number, index: number): string {
  return `${stepFileName(step)}/trajectory-${index}.rollout.txt`;
}

export function transcriptUri({ runDirectory, step, index }: TranscriptAddress): string {
  let dir = runDirectory.replace(/\\/g, '/');
  if (!dir.startsWith('/')) dir = `/${dir}`; // c:/runs/a → /c:/runs/a
  const encoded = dir
    .split('/')
    .map((segment) => encodeURIComponent(segment))
    .join('/');
  return `${TRANSCRIPT_SCHEME}:${encoded.replace(/\/$/, '')}/${transcriptFileName(step, index)}`;
}

/** The address in a URI's decoded path (`vscode.Uri.path`); undefined when it is not a transcript. */
export function parseTranscriptPath(path: string): TranscriptAddress | undefined {
  const match = /^(.*)\/step-(\d{6,})\/trajectory-(\d+)\.rollout\.txt$/.exec(path);
  if (!match) return undefined;
  let runDirectory = match[1];
  if (/^\/[A-Za-z]:\//.test(runDirectory)) runDirectory = runDirectory.slice(1); // a Windows drive
  return { runDirectory, step: Number(match[2]), index: Number(match[3]) };
}

/** The same, from the URI's text (as DAP carries it): scheme checked, percent-escapes decoded. */
export function parseTranscriptUri(uri: string): TranscriptAddress | undefined {
  const prefix = `${TRANSCRIPT_SCHEME}:`;
  if (!uri.startsWith(prefix)) return undefined;
  const path = uri
    .slice(prefix.length)
    .replace(/^\/\/[^/]*/, '')
    .split(/[?#]/)[0];
  try {
    return parseTranscriptPath(decodeURIComponent(path));
  } catch {
    return undefined;
  }
}

/** A branch of a re-roll (`branches/<id>.json` of the run), as a transcript document. */
export interface BranchTranscriptAddress {
  runDirectory: string;
  id: string;
  /** The branch's position in its set. */
  branch: number;
}

function encodedRunDirectory(runDirectory: string): string {
  let dir = runDirectory.replace(/\\/g, '/');
  if (!dir.startsWith('/')) dir = `/${dir}`;
  return dir
    .split('/')
    .map((segment) => encodeURIComponent(segment))
    .join('/')
    .replace(/\/$/, '');
}

export function branchTranscriptUri({ runDirectory, id, branch }: BranchTranscriptAddress): string {
  return `${TRANSCRIPT_SCHEME}:${encodedRunDirectory(runDirectory)}/branches/${encodeURIComponent(id)}/branch-${branch}.rollout.txt`;
}

export function parseBranchTranscriptPath(path: string): BranchTranscriptAddress | undefined {
  const match = /^(.*)\/branches\/([A-Za-z0-9._-]+)\/branch-(\d+)\.rollout\.txt$/.exec(path);
  if (!match) return undefined;
  let runDirectory = match[1];
  if (/^\/[A-Za-z]:\//.test(runDirectory)) runDirectory = runDirectory.slice(1);
  return { runDirectory, id: match[2], branch: Number(match[3]) };
}
