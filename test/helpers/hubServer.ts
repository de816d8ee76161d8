/**
 * A Hugging Face Hub on 127.0.0.1 for tests (these machines cannot reach the real one), speaking
 * the endpoints @huggingface/hub and our downloader call, with the real Hub's headers:
 *
 * - `GET /api/models/{org}/{name}/revision/{rev}` → model info with `sha` (the commit);
 * - `GET /api/models/{org}/{name}/tree/{commit}` → the top folder's files: `oid` (git blob id),
 *   `size`, and for LFS files `lfs: { oid: sha256, size, pointerSize }`;
 * - `GET /{org}/{name}/resolve/{rev}/{file}` → a small file itself (`ETag: "<git blob id>"`,
 *   `X-Repo-Commit`), or for an LFS file a 302 to the CDN with `X-Linked-Etag: "<sha256>"` and
 *   `X-Linked-Size`;
 * - `GET /cdn/{sha256}` → the LFS file's bytes, honouring `Range: bytes=N-` (206).
 *
 * Errors carry `X-Error-Code` as the Hub sends it: RepoNotFound (401 without a token, 404 with
 * one), RevisionNotFound (404), GatedRepo (401 without a token, 403 with one not granted).
 * Every request is recorded; a file's transfer can be cut after N bytes to test resuming.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';

export interface HubFile {
  path: string;
  content: Buffer;
  /** Stored with Git LFS (the Hub does so for weights and big files). */
  lfs: boolean;
  /** A malicious mirror: the id the listing gives for the file instead of its real one. */
  listedId?: string;
}

export interface HubRepo {
  /** Branch and tag names → commit. */
  refs: Record<string, string>;
  /** Commit → its files. */
  commits: Record<string, HubFile[]>;
  /** Files are served only with this token. */
  gatedToken?: string;
}

export interface RecordedRequest {
  method: string;
  url: string;
  range: string | undefined;
  authorization: string | undefined;
}

export function gitBlobId(content: Buffer): string {
  return crypto.createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

export function sha256(content: Buffer): string {
  return crypto.createHash('sha256').update(content).digest('hex');
}

/** The git LFS pointer file the repo's git tree holds in place of an LFS file. */
function lfsPointer(content: Buffer): Buffer {
  return Buffer.from(
    `version https://git-lfs.github.com/spec/v1\noid sha256:${sha256(content)}\nsize ${content.length}\n`,
  );
}

/** The Hub's name for a file's blob in the cache: sha256 for LFS files, the git blob id otherwise. */
export function hubEtag(file: HubFile): string {
  return file.lfs ? sha256(file.content) : gitBlobId(file.content);
}

/** A repo's files from a model folder (symlinks followed), LFS for weights as on the Hub. */
export function filesFromFolder(dir: string, extra: Record<string, string | Buffer> = {}): HubFile[] {
  const files: HubFile[] = fs.readdirSync(dir).map((name) => ({
    path: name,
    content: fs.readFileSync(path.join(dir, name)),
    lfs: /\.(safetensors|bin|gguf|onnx)$/.test(name),
  }));
  for (const [name, content] of Object.entries(extra))
    files.push({ path: name, content: Buffer.from(content), lfs: /\.(safetensors|bin|gguf|onnx)$/.test(name) });
  return files;
}

export function fakeCommit(seed: string): string {
  return crypto.createHash('sha1').update(seed).digest('hex');
}

export class HubServer {
  readonly requests: RecordedRequest[] = [];
  /** Cut the next transfer of this LFS file (by path) after this many bytes, once. */
  cutAfter: { file: string; bytes: number } | undefined;
  /** Send this file followed by bytes that never end (a hostile or broken server), without a Content-Length. */
  overrun: { file: string } | undefined;
  /** Send this file in pieces of this many bytes, 20 ms apart (a slow network). */
  trickle: { file: string; bytes: number } | undefined;
  private server!: http.Server;

  constructor(readonly repos: Map<string, HubRepo>) {}

  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Requests that transferred file contents (resolve or CDN), not API calls. */
  fileRequests(): RecordedRequest[] {
    return this.requests.filter((r) => r.url.includes('/resolve/') || r.url.startsWith('/cdn/'));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://hub');
    this.requests.push({
      method: req.method ?? 'GET',
      url: url.pathname,
      range: req.headers.range,
      authorization: req.headers.authorization,
    });
    const token = req.headers.authorization?.replace(/^Bearer /, '');
    const error = (status: number, code: string | undefined, message: string) => {
      res.writeHead(status, {
        'Content-Type': 'application/json',
        ...(code ? { 'X-Error-Code': code } : {}),
        'X-Error-Message': message,
      });
      res.end(JSON.stringify({ error: message }));
    };
    const findRepo = (name: string): HubRepo | undefined => this.repos.get(name);
    const findCommit = (repo: HubRepo, rev: string): string | undefined =>
      repo.refs[rev] ?? (repo.commits[rev] ? rev : undefined);

    let m = /^\/api\/models\/([^/]+\/[^/]+)\/(revision|tree)\/(.+)$/.exec(url.pathname);
    if (m) {
      const [, name, kind, rawRev] = m;
      const rev = decodeURIComponent(rawRev);
      const repo = findRepo(name);
      if (!repo) return error(token ? 404 : 401, 'RepoNotFound', 'Repository not found');
      const commit = findCommit(repo, rev);
      if (!commit) return error(404, 'RevisionNotFound', `Invalid rev id: ${rev}`);
      const files = repo.commits[commit];
      if (kind === 'revision') {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(
          JSON.stringify({
            _id: crypto.createHash('md5').update(name).digest('hex').slice(0, 24),
            id: name,
            sha: commit,
            private: false,
            gated: repo.gatedToken ? 'manual' : false,
            lastModified: '2026-01-01T00:00:00.000Z',
            siblings: files.map((f) => ({ rfilename: f.path })),
          }),
        );
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify(
          files.map((f) =>
            f.lfs
              ? {
                  type: 'file',
                  oid: gitBlobId(lfsPointer(f.content)),
                  size: f.content.length,
                  path: f.path,
                  lfs: {
                    oid: f.listedId ?? sha256(f.content),
                    size: f.content.length,
                    pointerSize: lfsPointer(f.content).length,
                  },
                }
              : { type: 'file', oid: f.listedId ?? gitBlobId(f.content), size: f.content.length, path: f.path },
          ),
        ),
      );
      return;
    }
    m = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    if (m) {
      const [, name, rawRev, rawFile] = m;
      const repo = findRepo(name);
      if (!repo) return error(token ? 404 : 401, 'RepoNotFound', 'Repository not found');
      const commit = findCommit(repo, decodeURIComponent(rawRev));
      if (!commit) return error(404, 'RevisionNotFound', `Invalid rev id: ${rawRev}`);
      if (repo.gatedToken && token !== repo.gatedToken) {
        return error(
          token ? 403 : 401,
          'GatedRepo',
          `Access to model ${name} is restricted. You must have access to it and be authenticated to access it. Please log in.`,
        );
      }
      const file = repo.commits[commit].find((f) => f.path === decodeURIComponent(rawFile));
      if (!file) return error(404, 'EntryNotFound', 'Entry not found');
      const common = {
        'X-Repo-Commit': commit,
        'Access-Control-Expose-Headers': 'X-Repo-Commit,X-Linked-Etag,X-Linked-Size',
      };
      if (file.lfs) {
        res.writeHead(302, {
          ...common,
          Location: `/cdn/${sha256(file.content)}?file=${encodeURIComponent(file.path)}`,
          'X-Linked-Etag': `"${sha256(file.content)}"`,
          'X-Linked-Size': String(file.content.length),
          ETag: `"${gitBlobId(lfsPointer(file.content))}"`,
        });
        res.end();
        return;
      }
      return this.sendBytes(req, res, file, { ...common, ETag: `"${gitBlobId(file.content)}"` });
    }
    m = /^\/cdn\/([0-9a-f]{64})$/.exec(url.pathname);
    if (m) {
      for (const repo of this.repos.values()) {
        for (const files of Object.values(repo.commits)) {
          const file = files.find((f) => f.lfs && sha256(f.content) === m![1]);
          if (file) return this.sendBytes(req, res, file, { ETag: `"cdn-${m[1].slice(0, 16)}"` });
        }
      }
    }
    error(404, undefined, `not found: ${url.pathname}`);
  }

  /** The file, then zeros for as long as the client reads (at most 256 MB, so a test of old code ends). */
  private sendEndless(res: http.ServerResponse, body: Buffer, headers: Record<string, string>): void {
    res.writeHead(200, { ...headers, 'Content-Type': 'application/octet-stream' });
    let sent = 0;
    const zeros = Buffer.alloc(1 << 16);
    const more = () => {
      while (!res.destroyed && sent < 256 << 20) {
        sent += zeros.length;
        if (!res.write(zeros)) return void res.once('drain', more);
      }
      res.end();
    };
    res.write(body, more);
  }

  private sendBytes(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    file: HubFile,
    headers: Record<string, string>,
  ): void {
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const size = file.content.length;
    const start = range ? Number(range[1]) : 0;
    const end = range && range[2] ? Number(range[2]) + 1 : size;
    if (range && start >= size) {
      res.writeHead(416, { 'Content-Range': `bytes */${size}` });
      res.end();
      return;
    }
    const body = file.content.subarray(start, end);
    if (this.overrun?.file === file.path) return this.sendEndless(res, body, headers);
    res.writeHead(range ? 206 : 200, {
      ...headers,
      'Content-Type': 'application/octet-stream',
      'Content-Length': String(body.length),
      'Accept-Ranges': 'bytes',
      ...(range ? { 'Content-Range': `bytes ${start}-${end - 1}/${size}` } : {}),
    });
    const cut = this.cutAfter;
    if (cut && cut.file === file.path && body.length > cut.bytes) {
      this.cutAfter = undefined;
      // Send part of the body, then drop the connection as a failing network would.
      res.write(body.subarray(0, cut.bytes), () => setTimeout(() => res.socket?.destroy(), 20));
      return;
    }
    const trickle = this.trickle;
    if (trickle && trickle.file === file.path) {
      let at = 0;
      const next = () => {
        if (res.destroyed) return;
        const piece = body.subarray(at, at + trickle.bytes);
        at += piece.length;
        if (at >= body.length) res.end(piece);
        else res.write(piece, () => setTimeout(next, 20));
      };
      next();
      return;
    }
    res.end(body);
  }
}
