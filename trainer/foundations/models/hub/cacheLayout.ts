import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { getRepoFolderName } from '@huggingface/hub';
import { HubError } from './hubErrors';

/**
 * One model repo's folder in the Hugging Face cache, laid out exactly as Python's
 * huggingface_hub lays it out, so either side reuses what the other downloaded:
 *
 *     <cache>/models--<org>--<name>/
 *       blobs/<etag>                      file contents, named by the Hub's ETag: the sha256 of
 *                                         an LFS file, the git blob id of any other
 *       blobs/<etag>.incomplete           a download in progress (resumed with an HTTP Range)
 *       snapshots/<commit>/<file>         relative symlink to ../../blobs/<etag>
 *       refs/<revision>                   the commit a branch or tag pointed at (no newline)
 *
 * Every name that becomes a path here came from a server (HF_ENDPOINT may be any server) or from
 * the user, so each is checked before it is joined: a blob is named only by a 40- or 64-hex
 * digest, a commit only by 40 hex, a revision only as a git ref name may be spelt, a snapshot file
 * only as a relative path without `..`; and every path is checked to stay inside the repo's
 * folder. A name that fails is an error naming it, never a file somewhere else.
 */
export class RepoCache {
  readonly folder: string;

  constructor(
    readonly cacheDir: string,
    readonly repo: string,
  ) {
    if (
      !/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(repo) ||
      repo.split('/').some((part) => part === '.' || part === '..')
    ) {
      throw new HubError(`"${repo}" is not a Hugging Face repo id: expected org/name (letters, digits, "-", "_", ".")`);
    }
    this.folder = path.join(cacheDir, getRepoFolderName({ name: repo, type: 'model' }));
  }

  /** `parts` joined under the repo's folder; anything that would leave it is refused. */
  private inside(...parts: string[]): string {
    const joined = path.join(this.folder, ...parts);
    const relative = path.relative(this.folder, joined);
    if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) {
      throw new HubError(
        `${this.repo}: the path ${JSON.stringify(parts.join('/'))} would leave the cache folder ${this.folder}; refused`,
      );
    }
    return joined;
  }

  blobPath(etag: string): string {
    checkDigest(etag, `${this.repo}: a file id`);
    return this.inside('blobs', etag);
  }

  incompletePath(etag: string): string {
    return `${this.blobPath(etag)}.incomplete`;
  }

  snapshotDir(commit: string): string {
    if (!isCommitHash(commit))
      throw new HubError(`${this.repo}: ${JSON.stringify(commit)} is not a commit hash (40 hex digits)`);
    return this.inside('snapshots', commit);
  }

  snapshotFile(commit: string, file: string): string {
    const parts = file.split('/');
    if (
      parts.some((part) => part === '' || part === '.' || part === '..' || part.includes('\\')) ||
      file.includes('\0')
    ) {
      throw new HubError(
        `${this.repo}: the file name ${JSON.stringify(file)} is not a plain relative path of the repo; refused`,
      );
    }
    this.snapshotDir(commit);
    return this.inside('snapshots', commit, ...parts);
  }

  private refPath(revision: string): string {
    checkRevision(revision);
    return this.inside('refs', ...revision.split('/'));
  }

  /** The commit a revision names in the cache: a full commit hash names itself; a branch or tag is looked up in refs/. */
  cachedCommit(revision: string): string | undefined {
    if (isCommitHash(revision)) return fs.existsSync(this.snapshotDir(revision)) ? revision : undefined;
    let commit: string;
    try {
      commit = fs.readFileSync(this.refPath(revision), 'utf8').trim();
    } catch (error) {
      if (error instanceof HubError) throw error;
      return undefined;
    }
    // A ref someone else wrote becomes a folder name: only a commit hash is taken.
    return isCommitHash(commit) ? commit : undefined;
  }

  /** Record that `revision` points at `commit` (atomically, and only when it changed, as huggingface_hub does). */
  writeRef(revision: string, commit: string): void {
    if (revision === commit) return;
    if (!isCommitHash(commit))
      throw new HubError(`${this.repo}: ${JSON.stringify(commit)} is not a commit hash (40 hex digits)`);
    const file = this.refPath(revision);
    try {
      if (fs.readFileSync(file, 'utf8') === commit) return;
    } catch {
      // no ref yet
    }
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${crypto.randomBytes(4).toString('hex')}.tmp`;
    fs.writeFileSync(tmp, commit);
    fs.renameSync(tmp, file);
  }

  /** Whether the snapshot has `file` and it leads to real contents (a dangling link does not count). */
  hasSnapshotFile(commit: string, file: string): boolean {
    try {
      return fs.statSync(this.snapshotFile(commit, file)).isFile();
    } catch {
      return false;
    }
  }

  hasBlob(etag: string, size: number): boolean {
    try {
      return fs.statSync(this.blobPath(etag)).size === size;
    } catch {
      return false;
    }
  }

  /** Point `snapshots/<commit>/<file>` at `blobs/<etag>` with a relative symlink (a copy where symlinks are refused, as on Windows without developer mode). */
  linkSnapshotFile(commit: string, file: string, etag: string): void {
    const pointer = this.snapshotFile(commit, file);
    const blob = this.blobPath(etag);
    fs.mkdirSync(path.dirname(pointer), { recursive: true });
    fs.rmSync(pointer, { force: true });
    try {
      fs.symlinkSync(path.relative(path.dirname(pointer), blob), pointer);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EPERM') throw error;
      fs.copyFileSync(blob, pointer);
    }
  }
}

export function isCommitHash(revision: string): boolean {
  return /^[0-9a-f]{40}$/.test(revision);
}

/** The ids the Hub names files by: a git blob id (40 hex) or an LFS file's sha256 (64 hex). */
export function isFileDigest(id: string): boolean {
  return /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(id);
}

export function checkDigest(id: string, what: string): void {
  if (!isFileDigest(id))
    throw new HubError(
      `${what} is ${JSON.stringify(id.length > 80 ? id.slice(0, 80) + '…' : id)}, not a git blob id (40 hex digits) or a sha256 (64 hex digits); the server's listing is refused`,
    );
}

/**
 * A branch, tag or commit as git allows ref names (and the Hub's `refs/pr/N`): segments of
 * letters, digits and `._-+@`, none empty, none starting with `.`, no `..`, at most 256 characters.
 */
export function checkRevision(revision: string): void {
  const ok =
    revision.length > 0 &&
    revision.length <= 256 &&
    revision
      .split('/')
      .every((segment) => /^[A-Za-z0-9_+@-][A-Za-z0-9._+@-]*$/.test(segment) && !segment.endsWith('.lock')) &&
    !revision.includes('..');
  if (!ok)
    throw new HubError(
      `the revision ${JSON.stringify(revision)} is not a branch, tag or commit hash: expected a name like main, v1.0 or refs/pr/3 (no "..", no segment starting with ".")`,
    );
}
