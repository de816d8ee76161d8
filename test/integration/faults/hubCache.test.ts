/**
 * A Hub mirror (HF_ENDPOINT may name any server) or a cache someone else wrote cannot make a pull
 * write outside the Hugging Face cache: a file id that is not a digest, a revision that climbs
 * out of refs/, a ref file that points elsewhere — each is refused with a message naming it, and
 * nothing is written outside the cache. A fake Hub (test/helpers/hubServer.ts) serves them.
 */
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pullModel } from '#trainer/foundations/models/hub';
import { fakeCommit, HubServer, type HubFile } from '../../helpers/hubServer';

const COMMIT = fakeCommit('malicious');
let work: string;
let cacheDir: string;
let server: HubServer | undefined;
const savedEnv = { ...process.env };

/** What pull selects for a model: the contents do not matter to a pull, only the names and ids. */
function files(configId?: string): HubFile[] {
  return [
    {
      path: 'config.json',
      content: Buffer.from('{"model_type":"qwen3"}'),
      lfs: false,
      ...(configId ? { listedId: configId } : {}),
    },
    { path: 'tokenizer.json', content: Buffer.from('{}'), lfs: false },
    { path: 'model.safetensors', content: Buffer.alloc(64, 3), lfs: true },
  ];
}

async function serve(refs: Record<string, string>, listed: HubFile[]): Promise<void> {
  server = await new HubServer(new Map([['evil/model', { refs, commits: { [COMMIT]: listed } }]])).start();
  for (const key of ['HF_HOME', 'HF_TOKEN', 'HF_HUB_OFFLINE', 'HUGGINGFACE_HUB_CACHE']) delete process.env[key];
  Object.assign(process.env, {
    HF_ENDPOINT: server.endpoint,
    HF_HUB_CACHE: cacheDir,
    HF_TOKEN_PATH: path.join(work, 'no-token'),
  });
}

/** Every file under `dir` (recursively), relative to it. */
function filesUnder(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true }) as string[])
    .filter((f) => fs.lstatSync(path.join(dir, f)).isFile())
    .sort();
}

before(() => (work = fs.mkdtempSync(path.join(os.tmpdir(), 'hub-cache-'))));
after(() => fs.rmSync(work, { recursive: true, force: true }));
beforeEach(() => {
  cacheDir = fs.mkdtempSync(path.join(work, 'cache-'));
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
  Object.assign(process.env, savedEnv);
});

describe('a Hub cache that cannot be escaped', () => {
  it('a listing whose file id is a path is refused, and nothing is written outside the cache', async () => {
    const outside = path.join(work, 'ESCAPED');
    await serve({ main: COMMIT }, files(path.relative(path.join(cacheDir, 'models--evil--model', 'blobs'), outside)));
    await assert.rejects(pullModel('evil/model'), (error: Error) => {
      assert.equal(error.name, 'HubError');
      assert.match(
        error.message,
        /listed "config\.json" of evil\/model, whose id is "\.\.\/\.\.\/\.\.\/ESCAPED", not a git blob id \(40 hex digits\) or a sha256 \(64 hex digits\)/,
      );
      return true;
    });
    assert.equal(fs.existsSync(outside), false, 'no file outside the cache');
    assert.deepEqual(
      fs.readdirSync(work).filter((f) => !f.startsWith('cache-')),
      [],
      'nothing next to the cache',
    );
    assert.equal(server!.fileRequests().length, 0, 'nothing was downloaded');
  });

  it('a revision that climbs out of refs/ is refused before any request, even when the mirror answers it', async () => {
    await serve({ main: COMMIT, '../../../X': COMMIT }, files());
    await assert.rejects(
      pullModel('evil/model', { revision: '../../../X' }),
      /the revision "\.\.\/\.\.\/\.\.\/X" is not a branch, tag or commit hash/,
    );
    assert.equal(server!.requests.length, 0, 'the Hub was not asked');
    assert.deepEqual(
      filesUnder(work).filter((f) => !f.startsWith('cache-') && f !== 'no-token'),
      [],
      'no ref written outside the cache',
    );
    assert.deepEqual(filesUnder(cacheDir), []);
  });

  it('an ordinary pull still works, and a tampered ref in the cache is not followed offline', async () => {
    await serve({ main: COMMIT, 'refs/pr/3': COMMIT }, files());
    const pulled = await pullModel('evil/model', { revision: 'refs/pr/3' });
    assert.equal(pulled.commit, COMMIT);
    assert.deepEqual(fs.readdirSync(pulled.snapshotDir).sort(), ['config.json', 'model.safetensors', 'tokenizer.json']);
    // Someone rewrites refs/main to point at a model folder outside the cache (snapshots/../../../elsewhere).
    const elsewhere = path.join(work, 'elsewhere');
    fs.cpSync(pulled.snapshotDir, elsewhere, { recursive: true, dereference: true });
    const refs = path.join(cacheDir, 'models--evil--model', 'refs');
    fs.mkdirSync(refs, { recursive: true });
    fs.writeFileSync(path.join(refs, 'main'), '../../../elsewhere');
    process.env.HF_HUB_OFFLINE = '1';
    await assert.rejects(
      pullModel('evil/model'),
      /HF_HUB_OFFLINE is set and the Hugging Face cache .* has no revision "main" of evil\/model/,
    );
  });
});
