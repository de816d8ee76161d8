/**
 * Start Training on a config whose model is a Hub repo id, through the debug adapter as the
 * editor runs it: the trainer downloads the model from a local Hub (test/helpers/hubServer.ts)
 * and the adapter turns its `download` progress into DAP progress events — which VS Code shows
 * as a progress notification — naming the repo, the file and the bytes; then training runs on
 * the downloaded snapshot.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DebugClient } from '@vscode/debugadapter-testsupport';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { serveAdapter, type AdapterServer } from '../../../extension/debugger/standalone';
import { RunStoreReader } from '#trainer/contract/runstore';
import { writeTinyAgentWorkspace } from '../../fixtures/tinyAgent';
import { fakeCommit, filesFromFolder, HubServer, type HubRepo } from '../../helpers/hubServer';
import { runsOf, sourceTrainerLaunch } from '../../helpers/liveTraining';

const REPO = 'test-org/tiny-agent';
const COMMIT = fakeCommit('tiny-agent for the adapter');

let workspace: string;
let config: string;
let hub: HubServer;
let adapter: AdapterServer;
const savedEnv = { ...process.env };

describe('Start Training with a Hub repo as the model', { timeout: 240_000 }, () => {
  before(async () => {
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'hub-adapter-'));
    config = await writeTinyAgentWorkspace(workspace, { steps: 1 });
    const repos = new Map<string, HubRepo>([
      [REPO, { refs: { main: COMMIT }, commits: { [COMMIT]: filesFromFolder(path.join(workspace, 'model')) } }],
    ]);
    fs.rmSync(path.join(workspace, 'model'), { recursive: true });
    fs.writeFileSync(
      config,
      fs
        .readFileSync(config, 'utf8')
        .replace("model: { path: 'model', lora: false }", `model: { path: '${REPO}', lora: false }`),
    );
    hub = await new HubServer(repos).start();
    for (const key of ['HF_TOKEN', 'HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE', 'HF_HOME', 'HUGGINGFACE_HUB_CACHE'])
      delete process.env[key];
    Object.assign(process.env, {
      HF_ENDPOINT: hub.endpoint,
      HF_HUB_CACHE: path.join(workspace, 'hf-cache'),
      HF_TOKEN_PATH: path.join(workspace, 'no-token'),
    });
    // The launch copies the environment now: the trainer it starts sees the local Hub and cache.
    adapter = await serveAdapter(0, { live: { launch: sourceTrainerLaunch(), stopTimeoutMs: 20_000 } });
  });

  after(async () => {
    await adapter?.close();
    await hub?.close();
    for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
    Object.assign(process.env, savedEnv);
    fs.rmSync(workspace, { recursive: true, force: true });
  });

  it('shows the download as DAP progress (repo, file, bytes), then trains on the snapshot', async () => {
    const dc = new DebugClient('node', 'unused', 'rollout');
    dc.defaultTimeout = 120_000;
    await dc.start(adapter.port);
    const events: DebugProtocol.Event[] = [];
    const outputs: string[] = [];
    dc.on('output', (event: DebugProtocol.OutputEvent) => outputs.push(event.body.output));
    for (const name of ['progressStart', 'progressUpdate', 'progressEnd'])
      dc.on(name, (event: DebugProtocol.Event) => events.push(event));
    try {
      await dc.initializeRequest({
        adapterID: 'rollout',
        linesStartAt1: true,
        columnsStartAt1: true,
        pathFormat: 'path',
        supportsProgressReporting: true,
      });
      const terminated = dc.waitForEvent('terminated', 180_000);
      await Promise.all([
        dc.waitForEvent('initialized').then(() => dc.configurationDoneRequest()),
        dc.launchRequest({ config, noDebug: true } as DebugProtocol.LaunchRequestArguments),
      ]);
      await terminated;
      const start = events.find(
        (e) =>
          e.event === 'progressStart' && (e as DebugProtocol.ProgressStartEvent).body.title === 'Downloading the model',
      ) as DebugProtocol.ProgressStartEvent | undefined;
      assert.ok(
        start,
        `no download progress; progress titles: ${events
          .map((e) => (e as DebugProtocol.ProgressStartEvent).body.title)
          .filter(Boolean)
          .join(', ')}\n${outputs.join('')}`,
      );
      const messages = events
        .filter((e) => (e.body as { progressId?: string }).progressId === start.body.progressId)
        .map((e) => (e.body as { message?: string }).message ?? '');
      assert.ok(
        messages.some((m) => /^test-org\/tiny-agent · model\.safetensors: [\d.]+ [kM]?B of [\d.]+ [kM]?B$/.test(m)),
        messages.join('\n'),
      );
      assert.ok(
        events.some(
          (e) =>
            e.event === 'progressEnd' &&
            (e as DebugProtocol.ProgressEndEvent).body.progressId === start.body.progressId,
        ),
        'the download progress ends',
      );
      assert.ok(
        outputs.some((o) => o.includes('test-org/tiny-agent: downloading 5 files')),
        outputs.join(''),
      );
      const [runDir] = runsOf(workspace);
      const run = new RunStoreReader(runDir).run();
      assert.equal(run.status, 'finished', outputs.join(''));
      assert.equal(
        run.model.path,
        path.join(workspace, 'hf-cache', 'models--test-org--tiny-agent', 'snapshots', COMMIT),
      );
    } finally {
      await dc.stop();
    }
  });
});
