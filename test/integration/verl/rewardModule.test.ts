/**
 * The exported reward module, run by Debian's python3 as verl would run it, returns the same
 * rewards as our own scoring. The tiny agent trains two GRPO steps with the multi-hop example's
 * search tool and rewards (exact match, the search tool's process reward, error penalties); then
 * every recorded trajectory is handed to the module the way verl hands it over — its response
 * decoded from the tokens after the prompt with special tokens skipped (`solution_str`), its row
 * from the exported Parquet's `extra_info` — after its tool calls went through serve-tools' MCP
 * endpoint, as they would in a verl rollout. The totals, outcome and process parts and each
 * call's process reward must equal what the run recorded.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { parquetReadObjects } from 'hyparquet';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { decodeInt32 } from '#trainer/contract/protocol/tokens';
import type { TrajectoryRecord } from '#trainer/contract/protocol/runStore';
import { RunStoreReader } from '#trainer/contract/runstore';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { startToolServer, type RunningToolServer } from '#trainer/bridges/serve/httpServer';
import { exportVerl } from '#trainer/bridges/verl/export';
import { writeTinyAgentWorkspace } from '../../fixtures/tinyAgent';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';

const PYTHON = '/usr/bin/python3';
const DRIVER = `import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("reward", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
items = json.load(open(sys.argv[2]))
batch = module.compute_score_batch([i["data_source"] for i in items], [i["solution_str"] for i in items], [i["ground_truth"] for i in items], [i["extra_info"] for i in items])
single = [module.compute_score(i["data_source"], i["solution_str"], i["ground_truth"], i["extra_info"]) for i in items]
print(json.dumps({"batch": batch, "single": single}))
`;

/** Runs python3 without blocking this process: the reward endpoint it calls lives here. */
function python(
  args: string[],
  env: Record<string, string>,
): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      PYTHON,
      args,
      {
        encoding: 'utf8',
        env: { ...process.env, ROLLOUT_STUDIO_REWARD_TIMEOUT: '60', ...env },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) =>
        resolve({ status: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

let workspace: string;
let server: RunningToolServer | undefined;
before(() => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'verl-reward-'));
});
after(async () => {
  await server?.close();
  fs.rmSync(workspace, { recursive: true, force: true });
});

function close(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual} ≠ ${expected}`);
}

describe('the exported reward module', () => {
  it('returns, through serve-tools, the rewards our own scoring recorded', async () => {
    const configFile = await writeTinyAgentWorkspace(workspace, {
      steps: 2,
      promptsPerStep: 3,
      groupSize: 2,
      name: 'reward-check',
    });
    const loaded = await loadConfig(configFile);
    const runDir = path.join(workspace, 'runs', 'r');
    const run = await new TrainingRun(loaded, { runDir, inProcessDevice: true }).run();
    assert.equal(run.run.status, 'finished');
    const out = path.join(workspace, 'verl');
    await exportVerl(loaded, { out, url: 'http://127.0.0.1:1' });
    server = await startToolServer(loaded, { host: '127.0.0.1', port: 0 });

    const buffer = fs.readFileSync(path.join(out, 'data/train.parquet'));
    const parquetRows = (await parquetReadObjects({
      file: buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer,
    })) as {
      data_source: string;
      reward_model: { ground_truth: string };
      extra_info: { row_id: string; row: string; index: bigint };
    }[];
    const byId = new Map(parquetRows.map((r) => [r.extra_info.row_id, r]));
    const tokenizer = Tokenizer.load(path.join(workspace, 'model'));
    const client = new Client({ name: 'verl-stand-in', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));

    const reader = new RunStoreReader(runDir);
    let compared = 0;
    let withCalls = 0;
    for (const step of reader.steps()) {
      const records: TrajectoryRecord[] = reader.trajectories(step).records;
      // The step's tool calls, made through serve-tools as verl's MCP tool would make them.
      for (const record of records) {
        for (const call of record.turns.flatMap((t) => t.toolCalls ?? [])) {
          if (!call.error && call.name)
            await client.callTool({ name: call.name, arguments: call.arguments as Record<string, unknown> });
        }
      }
      const items = records.map((record) => {
        const row = byId.get(record.rowId)!;
        const ids = Array.from(decodeInt32(record.tokens.ids));
        return {
          data_source: row.data_source,
          solution_str: tokenizer.decode(ids.slice(record.lengths.prompt), { skipSpecialTokens: true }),
          ground_truth: row.reward_model.ground_truth,
          extra_info: { index: Number(row.extra_info.index), row_id: row.extra_info.row_id, row: row.extra_info.row },
        };
      });
      const input = path.join(workspace, `items-${step}.json`);
      fs.writeFileSync(input, JSON.stringify(items));
      const ran = await python(['-c', DRIVER, path.join(out, 'reward/rollout_studio_reward.py'), input], {
        ROLLOUT_STUDIO_REWARD_URL: `${server.url}/reward`,
      });
      assert.equal(ran.status, 0, ran.stderr);
      const { batch, single } = JSON.parse(ran.stdout) as Record<
        'batch' | 'single',
        { score: number; rs_outcome: number; rs_process: number; rs_row_id: string; rs_calls: string }[]
      >;
      records.forEach((record, i) => {
        const where = `step ${step} trajectory ${record.index}`;
        for (const result of [batch[i], single[i]]) {
          close(result.score, record.rewards.total, `${where}: total`);
          close(result.rs_outcome, record.rewards.outcome, `${where}: outcome`);
          close(result.rs_process, record.rewards.process, `${where}: process`);
          assert.equal(result.rs_row_id, record.rowId);
          const calls = JSON.parse(result.rs_calls) as { name?: string; processReward?: number; error?: string }[];
          const recorded = record.turns.flatMap((t) => t.toolCalls ?? []);
          assert.deepEqual(
            calls.map((c) => [c.name, c.error ?? null, c.processReward ?? null]),
            recorded.map((c) => [c.name, c.error?.kind ?? null, c.processReward ?? null]),
            `${where}: calls`,
          );
          if (recorded.length) withCalls++;
        }
        compared++;
      });
    }
    await client.close();
    assert.equal(compared, 12, '2 steps × 3 prompts × 2 samples');
    assert.ok(withCalls > 0, 'trajectories with tool calls were compared');
  });

  it('says what is wrong when serve-tools cannot be reached', async () => {
    const module = path.join(workspace, 'verl/reward/rollout_studio_reward.py');
    const input = path.join(workspace, 'unreachable.json');
    fs.writeFileSync(
      input,
      JSON.stringify([
        {
          data_source: 'x',
          solution_str: 'a',
          ground_truth: 'a',
          extra_info: { row: '{"id":"q","prompt":"p","answer":"a"}' },
        },
      ]),
    );
    const ran = await python(['-c', DRIVER, module, input], { ROLLOUT_STUDIO_REWARD_URL: 'http://127.0.0.1:9/reward' });
    assert.notEqual(ran.status, 0);
    assert.match(
      ran.stderr,
      /RolloutStudioRewardError: cannot reach the reward endpoint http:\/\/127\.0\.0\.1:9\/reward .*is `rollout-studio serve-tools` running\?/,
    );
  });
});
