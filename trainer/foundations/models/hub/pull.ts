import * as fs from 'node:fs';
import * as path from 'node:path';
import { listFiles, modelInfo } from '@huggingface/hub';
import { checkDigest, checkRevision, isCommitHash, RepoCache } from './cacheLayout';
import { BlobHttpError, downloadBlob } from './downloadBlob';
import {
  cacheWriteError,
  failureOfApiError,
  httpFailureError,
  HubError,
  isHubApiError,
  networkError,
  networkErrorCode,
  type HubRequestContext,
} from './hubErrors';
import {
  missingFromSnapshot,
  selectModelFiles,
  shardsFromIndex,
  WEIGHTS_INDEX,
  type FileSelection,
  type ModelFileSet,
  type RepoFile,
} from './modelFiles';
import { hubSettings, type HubSettings } from './hubSettings';
import { formatBytes } from '../../../contract/formatBytes';

/**
 * `rollout-studio pull`: a model from the Hugging Face Hub into the Hugging Face cache, only
 * the files a model needs (modelFiles.ts), laid out as huggingface_hub lays them out
 * (cacheLayout.ts). Returns the snapshot folder, which is an ordinary model folder.
 *
 * @huggingface/hub does the Hub's API: the revision's commit (`modelInfo`), the file listing
 * (`listFiles`) and the cache folder's location. The file transfer is ours (downloadBlob.ts
 * says why). With `HF_HUB_OFFLINE=1` nothing goes to the network: the revision is looked up
 * in the cache's refs and the snapshot must be complete.
 */

export interface PullOptions {
  /** A branch, tag or commit hash (default `main`). */
  revision?: string;
  /** Everything a model needs (default), or only its tokenizer files. */
  files?: ModelFileSet;
  /** Default: from the environment (HF_ENDPOINT, HF_HUB_CACHE, HF_TOKEN, HF_HUB_OFFLINE). */
  settings?: HubSettings;
  onProgress?: (progress: PullProgress) => void;
  signal?: AbortSignal;
}

/** How far a pull is: `done` of `total` bytes still to download when it began (files found in the cache count for neither). */
export interface PullProgress {
  repo: string;
  /** The file being downloaded; undefined before the first and after the last. */
  file: string | undefined;
  /** Its position among the files to download, from 1. */
  fileIndex: number;
  fileCount: number;
  done: number;
  total: number;
  finished: boolean;
}

export interface PullResult {
  repo: string;
  revision: string;
  commit: string;
  /** The model folder: `<cache>/models--org--name/snapshots/<commit>`. */
  snapshotDir: string;
  /** The files the folder has for this pull. */
  files: string[];
  /** Those that were downloaded now (the others were in the cache). */
  downloaded: string[];
  downloadedBytes: number;
  /** Resolved from the cache alone (HF_HUB_OFFLINE). */
  offline: boolean;
}

export async function pullModel(repo: string, options: PullOptions = {}): Promise<PullResult> {
  const settings = options.settings ?? hubSettings();
  const revision = options.revision ?? 'main';
  const set = options.files ?? 'model';
  checkRevision(revision);
  const cache = new RepoCache(settings.cacheDir, repo);
  if (settings.offline) return fromCache(cache, revision, set, settings);

  const session = hubSession(repo, revision, settings, cache, options);
  const commit = await resolveCommit(session);
  const listed = await listRepoFiles(session, commit);
  let selection: FileSelection;
  try {
    selection = selectModelFiles(repo, [...listed.values()], set);
  } catch (error) {
    throw new HubError((error as Error).message);
  }
  try {
    cache.writeRef(revision, commit);
  } catch (error) {
    throw cacheWriteError(error as NodeJS.ErrnoException, session.context) ?? error;
  }

  const tally: DownloadTally = { downloaded: [], downloadedBytes: 0 };
  const fetchFiles = (names: string[], reportProgress: boolean) =>
    fetchSnapshotFiles(session, commit, listed, names, reportProgress, tally);
  let files = selection.files;
  if (selection.needsIndex) {
    // The index (a few kB) names the shards: fetched first, so that one pass with one progress bar covers everything else.
    await fetchFiles([WEIGHTS_INDEX], false);
    const indexFile = cache.snapshotFile(commit, WEIGHTS_INDEX);
    try {
      files = [...files, ...shardsFromIndex(indexFile, fs.readFileSync(indexFile, 'utf8'))];
    } catch (error) {
      throw new HubError(`${repo}: ${(error as Error).message}`);
    }
  }
  await fetchFiles(files, true);
  return {
    repo,
    revision,
    commit,
    snapshotDir: cache.snapshotDir(commit),
    files,
    downloaded: tally.downloaded,
    downloadedBytes: tally.downloadedBytes,
    offline: false,
  };
}

/** What every step of one online pull shares: the repo, its cache, and how to ask the Hub. */
interface HubSession {
  repo: string;
  revision: string;
  settings: HubSettings;
  cache: RepoCache;
  context: HubRequestContext;
  options: PullOptions;
  /** The arguments @huggingface/hub's calls take for the endpoint, the fetch and the token. */
  api: { hubUrl: string; fetch: typeof fetch; accessToken?: `hf_${string}` };
  /** Runs a Hub request; any failure comes out as a HubError that names the repo (and the file). */
  call: <T>(what: () => Promise<T>, file?: string) => Promise<T>;
}

/** A file of the revision's listing: its id (`etag`) names its blob and is what its download is checked against. */
type ListedFile = RepoFile & { etag: string };

/** What a pull downloaded, summed over its passes. */
interface DownloadTally {
  downloaded: string[];
  downloadedBytes: number;
}

function hubSession(
  repo: string,
  revision: string,
  settings: HubSettings,
  cache: RepoCache,
  options: PullOptions,
): HubSession {
  const context: HubRequestContext = { repo, revision, settings };
  // The Hub's error code (X-Error-Code) is a header, which @huggingface/hub's errors do not keep: note it per URL.
  const errorCodes = new Map<string, string>();
  const hubFetch: typeof fetch = async (input, init) => {
    const response = await fetch(input, { ...init, ...(options.signal ? { signal: options.signal } : {}) });
    const code = response.headers.get('x-error-code');
    if (!response.ok && code) errorCodes.set(response.url, code);
    return response;
  };
  const api = {
    hubUrl: settings.endpoint,
    fetch: hubFetch,
    ...(settings.token ? { accessToken: settings.token as `hf_${string}` } : {}),
  };
  const call = async <T>(what: () => Promise<T>, file?: string): Promise<T> => {
    try {
      return await what();
    } catch (error) {
      throw explain(error, { ...context, ...(file ? { file } : {}) }, cache, errorCodes);
    }
  };
  return { repo, revision, settings, cache, context, options, api, call };
}

/** The commit the revision points at now. */
function resolveCommit({ api, call, repo, revision, settings }: HubSession): Promise<string> {
  return call(async () => {
    const info = await modelInfo({ ...api, name: repo, revision, additionalFields: ['sha'] });
    if (typeof info.sha !== 'string' || !isCommitHash(info.sha))
      throw new HubError(
        `${settings.endpoint} gave no commit for revision "${revision}" of ${repo} (got ${JSON.stringify(info.sha)})`,
      );
    return info.sha;
  });
}

/** The commit's files by path, each with its checked id. */
function listRepoFiles({ api, call, repo, settings }: HubSession, commit: string): Promise<Map<string, ListedFile>> {
  return call(async () => {
    const files = new Map<string, ListedFile>();
    for await (const entry of listFiles({ ...api, repo, revision: commit })) {
      if (entry.type !== 'file') continue;
      const etag = entry.lfs?.oid ?? entry.oid;
      if (!etag) throw new HubError(`${settings.endpoint} listed ${entry.path} of ${repo} without its id (oid)`);
      // The id names the blob file and is what the download is verified against: nothing but a digest is taken.
      checkDigest(etag, `${settings.endpoint} listed ${JSON.stringify(entry.path)} of ${repo}, whose id`);
      files.set(entry.path, { path: entry.path, size: entry.lfs?.size ?? entry.size, etag });
    }
    return files;
  });
}

/**
 * Puts `names` into the snapshot folder: linked from blobs the cache has, downloaded otherwise (with
 * progress when `reportProgress`); what was downloaded is added to `tally`.
 */
async function fetchSnapshotFiles(
  session: HubSession,
  commit: string,
  listed: ReadonlyMap<string, ListedFile>,
  names: string[],
  reportProgress: boolean,
  tally: DownloadTally,
): Promise<void> {
  const { repo, cache, options } = session;
  const toDownload = linkCachedFiles(session, commit, wantedFiles(session, commit, listed, names));
  const total = toDownload.reduce((sum, f) => sum + f.size, 0);
  if (toDownload.length) {
    try {
      fs.mkdirSync(path.join(cache.folder, 'blobs'), { recursive: true });
    } catch (error) {
      throw cacheWriteError(error as NodeJS.ErrnoException, session.context) ?? error;
    }
    checkFreeSpace(cache, toDownload, session.context);
  }
  let before = 0;
  const report = (file: string | undefined, index: number, done: number, finished: boolean) =>
    reportProgress &&
    options.onProgress?.({ repo, file, fileIndex: index, fileCount: toDownload.length, done, total, finished });
  for (const [i, f] of toDownload.entries()) {
    report(f.path, i + 1, before, false);
    const resumedFrom = fs.existsSync(cache.incompletePath(f.etag))
      ? fs.statSync(cache.incompletePath(f.etag)).size
      : 0;
    await downloadFile(session, commit, f, total - before, (written) => report(f.path, i + 1, before + written, false));
    cache.linkSnapshotFile(commit, f.path, f.etag);
    before += f.size;
    tally.downloaded.push(f.path);
    tally.downloadedBytes += f.size - Math.min(resumedFrom, f.size);
  }
  if (toDownload.length) report(undefined, toDownload.length, total, true);
}

/** The listed files for `names` (an index can name a shard the revision lacks). */
function wantedFiles(
  { repo, revision }: HubSession,
  commit: string,
  listed: ReadonlyMap<string, ListedFile>,
  names: string[],
): ListedFile[] {
  return names.map((name) => {
    const file = listed.get(name);
    if (!file)
      throw new HubError(
        `${repo}: ${WEIGHTS_INDEX} lists ${name}, which is not in revision "${revision}" (commit ${commit})`,
      );
    return file;
  });
}

/** Links the files whose blob the cache already has into the snapshot; returns those still to download. */
function linkCachedFiles({ cache }: HubSession, commit: string, wanted: ListedFile[]): ListedFile[] {
  const missing = wanted.filter((f) => !cache.hasSnapshotFile(commit, f.path));
  for (const f of missing.filter((f) => cache.hasBlob(f.etag, f.size))) cache.linkSnapshotFile(commit, f.path, f.etag);
  return missing.filter((f) => !cache.hasBlob(f.etag, f.size));
}

/** One file's blob, downloaded (or resumed) into the cache. */
function downloadFile(
  { call, cache, context, options, repo, settings }: HubSession,
  commit: string,
  f: ListedFile,
  bytesNeeded: number,
  onBytes: (written: number) => void,
): Promise<void> {
  return call(async () => {
    try {
      await downloadBlob({
        url: `${settings.endpoint}/${repo}/resolve/${commit}/${f.path.split('/').map(encodeURIComponent).join('/')}`,
        blobPath: cache.blobPath(f.etag),
        size: f.size,
        etag: f.etag,
        token: settings.token,
        ...(options.signal ? { signal: options.signal } : {}),
        onBytes,
      });
    } catch (error) {
      throw cacheWriteError(error as NodeJS.ErrnoException, { ...context, file: f.path, bytesNeeded }) ?? error;
    }
  }, f.path);
}

/** HF_HUB_OFFLINE: the revision's snapshot from the cache, complete, or an error that says how to get it. */
function fromCache(cache: RepoCache, revision: string, set: ModelFileSet, settings: HubSettings): PullResult {
  const commit = cache.cachedCommit(revision);
  const how = `Unset HF_HUB_OFFLINE and run \`rollout-studio pull ${cache.repo}${revision === 'main' ? '' : ` --revision ${revision}`}\` where the Hub can be reached`;
  if (!commit || !fs.existsSync(cache.snapshotDir(commit))) {
    throw new HubError(
      `HF_HUB_OFFLINE is set and the Hugging Face cache (${settings.cacheDir}) has no revision "${revision}" of ${cache.repo} (looked in ${cache.folder}). ${how}.`,
    );
  }
  const dir = cache.snapshotDir(commit);
  const names = new Set(fs.readdirSync(dir).filter((name) => cache.hasSnapshotFile(commit, name)));
  const missing = missingFromSnapshot(names, set, () => {
    try {
      return shardsFromIndex(path.join(dir, WEIGHTS_INDEX), fs.readFileSync(path.join(dir, WEIGHTS_INDEX), 'utf8'));
    } catch (error) {
      throw new HubError(`${(error as Error).message}. ${how}.`);
    }
  });
  if (missing.length)
    throw new HubError(
      `HF_HUB_OFFLINE is set and the cached snapshot ${dir} of ${cache.repo} lacks ${missing.join(', ')}. ${how}.`,
    );
  return {
    repo: cache.repo,
    revision,
    commit,
    snapshotDir: dir,
    files: [...names].sort(),
    downloaded: [],
    downloadedBytes: 0,
    offline: true,
  };
}

/** Fail before downloading what the disk cannot hold (huggingface_hub only warns; a half-written gigabyte helps nobody). */
function checkFreeSpace(cache: RepoCache, files: { size: number; etag: string }[], context: HubRequestContext): void {
  const needed = files.reduce(
    (sum, f) =>
      sum +
      f.size -
      Math.min(
        f.size,
        fs.existsSync(cache.incompletePath(f.etag)) ? fs.statSync(cache.incompletePath(f.etag)).size : 0,
      ),
    0,
  );
  if (needed === 0) return;
  let free: number;
  try {
    const stats = fs.statfsSync(path.join(cache.folder, 'blobs'));
    free = stats.bavail * stats.bsize;
  } catch {
    return;
  }
  if (free < needed) {
    throw new HubError(
      `not enough space for ${context.repo} in the Hugging Face cache ${context.settings.cacheDir}: ${formatBytes(needed)} to download, ${formatBytes(free)} free. Free space there, or set HF_HUB_CACHE to a folder on a disk with room`,
    );
  }
}

/** Any failure of a Hub request as a HubError that names the repo and what to do. */
function explain(
  error: unknown,
  context: HubRequestContext,
  cache: RepoCache,
  errorCodes: ReadonlyMap<string, string>,
): unknown {
  if (error instanceof HubError) return error;
  if ((error as Error)?.name === 'AbortError') {
    return new HubError(
      `stopped while ${context.file ? `downloading ${context.file} of` : 'looking up'} ${context.repo}; what was downloaded is kept, and the next pull resumes it`,
    );
  }
  if (isHubApiError(error)) return httpFailureError(failureOfApiError(error, errorCodes), context);
  if (error instanceof BlobHttpError) return httpFailureError(error.failure, context);
  if (error instanceof TypeError && /access token must start with 'hf_'/.test(error.message)) {
    return new HubError(
      `HF_TOKEN does not hold a Hugging Face access token (they start with hf_); create one at ${context.settings.endpoint}/settings/tokens`,
    );
  }
  const code = networkErrorCode(error);
  if (code) {
    const cachedCommit = cache.cachedCommit(context.revision);
    return networkError(code, { ...context, ...(cachedCommit ? { cachedCommit } : {}) });
  }
  return error;
}
