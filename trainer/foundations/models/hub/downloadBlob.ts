import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import { type HubHttpFailure, networkErrorCode } from './hubErrors';
import { isFileDigest } from './cacheLayout';

/**
 * One file's bytes into `blobs/<etag>`: a plain HTTP GET of the Hub's `resolve` URL (which
 * redirects to its CDN), written to `blobs/<etag>.incomplete` and renamed when complete and
 * verified. An interrupted download resumes where the `.incomplete` file ends with an HTTP
 * `Range: bytes=N-` request — in the same pull when the connection drops mid-file, and in the
 * next pull after the process was stopped — as huggingface_hub's `http_get` does.
 *
 * Why not @huggingface/hub's `downloadFileToCacheDir`: in version 2.17 it restarts every
 * download from byte 0 (no resume), reports no progress, names the snapshot folder after the
 * file's last commit rather than the revision's commit unless given a commit hash, and asks
 * the Xet protocol for big files (a second code path we could not test here). Plain HTTP is
 * the path huggingface_hub itself takes without `hf_xet`, and the Hub serves it for every file.
 */

export interface BlobDownload {
  url: string;
  /** Where the finished file goes (`blobs/<etag>`); the partial one is this plus `.incomplete`. */
  blobPath: string;
  size: number;
  /** The Hub's ETag for the file: the sha256 of an LFS file (64 hex), the git blob id of another (40 hex). The download is checked against it. */
  etag: string;
  token: string | undefined;
  signal?: AbortSignal;
  /** Bytes written so far for this file, including what a resumed `.incomplete` already had. */
  onBytes?: (written: number) => void;
  /** Retries after the connection drops mid-file (each resumes with a Range request). */
  retries?: number;
}

/** The server answered, but not with the file. */
export class BlobHttpError extends Error {
  constructor(readonly failure: HubHttpFailure) {
    super(`HTTP ${failure.status} for ${failure.url}`);
    this.name = 'BlobHttpError';
  }
}

/** The bytes that arrived are not the file the Hub announced (wrong size or hash). The partial file is deleted. */
export class BlobIntegrityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BlobIntegrityError';
  }
}

function partialSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

async function failureOf(response: Response): Promise<HubHttpFailure> {
  let serverMessage = response.headers.get('x-error-message') ?? undefined;
  if (!serverMessage && response.headers.get('content-type')?.includes('json')) {
    const body = (await response.json().catch(() => undefined)) as { error?: unknown } | undefined;
    if (typeof body?.error === 'string') serverMessage = body.error;
  } else await response.body?.cancel().catch(() => undefined);
  return {
    status: response.status,
    url: response.url,
    errorCode: response.headers.get('x-error-code') ?? undefined,
    serverMessage,
  };
}

/**
 * Append the response body to the partial file from `start`, never past `size` (the listed size:
 * a server that sends more is not sending this file, and could fill the disk); returns the
 * partial file's size afterwards (even when the body broke off), and whether the server overran.
 */
async function appendBody(
  response: Response,
  incomplete: string,
  start: number,
  size: number,
  onBytes: ((written: number) => void) | undefined,
): Promise<{ written: number; overran?: boolean; error?: unknown }> {
  const handle = await fs.promises.open(incomplete, start > 0 ? 'a' : 'w');
  let written = start;
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      // Leaving the loop cancels the body: nothing more is read.
      if (written + chunk.byteLength > size) return { written, overran: true };
      await handle.write(chunk);
      written += chunk.byteLength;
      onBytes?.(written);
    }
    return { written };
  } catch (error) {
    // A write error (a full disk) is not a dropped connection: it goes up as it is.
    if ((error as NodeJS.ErrnoException).syscall === 'write') throw error;
    return { written, error };
  } finally {
    await handle.close();
  }
}

/** The hash the Hub names the file by: sha256 for LFS files, git's blob id (sha1 of "blob <size>\0" + contents) for the others. */
async function contentHash(file: string, etag: string, size: number): Promise<string> {
  const algorithm = /^[0-9a-f]{64}$/.test(etag) ? 'sha256' : /^[0-9a-f]{40}$/.test(etag) ? 'sha1' : undefined;
  if (!algorithm)
    throw new BlobIntegrityError(
      `${file}: the id ${JSON.stringify(etag)} is not a digest the download can be checked against`,
    );
  const hash = crypto.createHash(algorithm);
  if (algorithm === 'sha1') hash.update(`blob ${size}\0`);
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export async function downloadBlob(download: BlobDownload): Promise<void> {
  // Verification is never skipped: an id that is not a digest cannot be checked, so nothing is downloaded for it.
  if (!isFileDigest(download.etag))
    throw new BlobIntegrityError(
      `${download.url}: the file's id ${JSON.stringify(download.etag)} is not a git blob id or a sha256, so the download could not be verified; refused`,
    );
  const incomplete = `${download.blobPath}.incomplete`;
  let start = partialSize(incomplete);
  if (start > download.size) {
    fs.rmSync(incomplete, { force: true });
    start = 0;
  }
  const retries = download.retries ?? 5;
  for (let attempt = 0; start < download.size || download.size === 0; attempt++) {
    const headers: Record<string, string> = { 'Accept-Encoding': 'identity' };
    // undici drops Authorization when a redirect leaves the Hub's origin (for the CDN's signed URL).
    if (download.token) headers['Authorization'] = `Bearer ${download.token}`;
    if (start > 0) headers['Range'] = `bytes=${start}-`;
    let response: Response;
    try {
      response = await fetch(download.url, {
        headers,
        redirect: 'follow',
        ...(download.signal ? { signal: download.signal } : {}),
      });
    } catch (error) {
      if (download.signal?.aborted || attempt >= retries || !networkErrorCode(error) || start === 0) throw error;
      await pause(attempt);
      continue;
    }
    if (response.status === 416 && start === download.size) break;
    if (!response.ok) throw new BlobHttpError(await failureOf(response));
    if (start > 0 && response.status === 200) {
      // The server ignored the Range: take the whole file from the start.
      start = 0;
    } else if (start > 0) {
      const range = /^bytes (\d+)-/.exec(response.headers.get('content-range') ?? '');
      if (!range || Number(range[1]) !== start) {
        await response.body?.cancel();
        throw new BlobIntegrityError(
          `${download.url}: asked for bytes ${start}- and got ${response.headers.get('content-range') ?? 'no Content-Range'}`,
        );
      }
    }
    const { written, overran, error } = await appendBody(response, incomplete, start, download.size, download.onBytes);
    if (overran) {
      fs.rmSync(incomplete, { force: true });
      throw new BlobIntegrityError(
        `${download.url}: the server sent more than the ${download.size} bytes the Hub lists for the file; stopped, the partial file was deleted, pull again`,
      );
    }
    if (!error) break;
    if (download.signal?.aborted || attempt >= retries || !networkErrorCode(error)) throw error;
    start = written;
    await pause(attempt);
  }
  const size = partialSize(incomplete);
  if (download.size === 0 && !fs.existsSync(incomplete)) fs.writeFileSync(incomplete, '');
  if (size !== download.size) {
    fs.rmSync(incomplete, { force: true });
    throw new BlobIntegrityError(
      `${download.url}: expected ${download.size} bytes, received ${size}; the partial file was deleted, pull again`,
    );
  }
  const hash = await contentHash(incomplete, download.etag, size);
  if (hash !== download.etag) {
    fs.rmSync(incomplete, { force: true });
    throw new BlobIntegrityError(
      `${download.url}: the downloaded bytes hash to ${hash}, not to the Hub's ETag ${download.etag}; the partial file was deleted, pull again`,
    );
  }
  fs.renameSync(incomplete, download.blobPath);
}

function pause(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** attempt, 2000)));
}
