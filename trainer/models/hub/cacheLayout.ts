import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { getRepoFolderName } from '@huggingface/hub';

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
 */
export class RepoCache {
  readonly folder: string;

  constructor(
    readonly cacheDir: string,
    readonly repo: string,
  ) {
    this.folder = path.join(cacheDir, getRepoFolderName({ name: repo, type: 'model' }));
  }

  blobPath(etag: string): string {
    return path.join(this.folder, 'blobs', etag);
  }

  incompletePath(etag: string): string {
    return `${this.blobPath(etag)}.incomplete`;
  }

  snapshotDir(commit: string): string {
    return path.join(this.folder, 'snapshots', commit);
  }

  snapshotFile(commit: string, file: string): string {
    return path.join(this.snapshotDir(commit), ...file.split('/'));
  }

  /** The commit a revision names in the cache: a full commit hash names itself; a branch or tag is looked up in refs/. */
  cachedCommit(revision: string): string | undefined {
    if (isCommitHash(revision)) return fs.existsSync(this.snapshotDir(revision)) ? revision : undefined;
    try {
      return fs.readFileSync(path.join(this.folder, 'refs', ...revision.split('/')), 'utf8').trim() || undefined;
    } catch {
      return undefined;
    }
  }

  /** Record that `revision` points at `commit` (atomically, and only when it changed, as huggingface_hub does). */
  writeRef(revision: string, commit: string): void {
    if (revision === commit) return;
    const file = path.join(this.folder, 'refs', ...revision.split('/'));
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
