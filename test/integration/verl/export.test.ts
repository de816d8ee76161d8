/**
 * `rollout-studio export verl`: the Parquet datasets read back by an independent reader
 * (hyparquet) match the dataset row for row; every Hydra key of the launch script is one of
 * verl's config keys (test/fixtures/verl/ppo_trainer_keys.txt, taken from verl's repository at
 * the commit it names); the tool config and MCP server file point at serve-tools; the README
 * lists every mapped and every unmappable setting.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { loadJsonlDataset } from '#trainer/foundations/data/dataset';
import { type LoadedConfig } from '#trainer/pipeline/training/config/trainingConfig';
import { exportVerl, type ExportResult } from '#trainer/bridges/verl/export';
import { createTrainingFixture, type TrainingFixture } from '../../helpers/trainingFixture';
import { MultihopFields, SYSTEM_PROMPT } from '../../../examples/multihop-search/rows';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';

const root = path.resolve(__dirname, '../../..');
const VERL_KEYS = new Set(
  fs
    .readFileSync(path.join(root, 'test/fixtures/verl/ppo_trainer_keys.txt'), 'utf8')
    .split('\n')
    .filter((line) => line && !line.startsWith('#')),
);

let fixture: TrainingFixture;
let loaded: LoadedConfig;
let out: string;
let result: ExportResult;
before(async () => {
  fixture = createTrainingFixture();
  loaded = await loadConfig(fixture.configFile);
  out = path.join(fixture.dir, 'verl');
  result = await exportVerl(loaded, { out, url: 'http://10.0.0.5:8808' });
});
after(() => fixture.cleanup());

async function readParquet(file: string): Promise<Record<string, unknown>[]> {
  const buffer = fs.readFileSync(file);
  const rows = await parquetReadObjects({
    file: buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer,
  });
  return JSON.parse(JSON.stringify(rows, (_k, v) => (typeof v === 'bigint' ? Number(v) : v)));
}

describe('export verl', () => {
  it("writes the datasets as Parquet in verl's RLHF layout, row for row", async () => {
    for (const [split, file, source] of [
      ['train', 'data/train.parquet', 'data/train.jsonl'],
      ['val', 'data/val.parquet', 'data/heldout.jsonl'],
    ] as const) {
      const dataset = loadJsonlDataset(path.join(fixture.dir, source), { fields: MultihopFields });
      const rows = await readParquet(path.join(out, file));
      assert.equal(rows.length, dataset.rows.length, file);
      rows.forEach((row, i) => {
        const expected = dataset.rows[i];
        const messages =
          expected.messages[0].role === 'system'
            ? expected.messages
            : [{ role: 'system', content: SYSTEM_PROMPT }, ...expected.messages];
        assert.deepEqual(
          row['prompt'],
          messages.map((m) => ({ role: m.role, content: m.content })),
          `${file} row ${i}: prompt`,
        );
        assert.equal(row['data_source'], 'tiny');
        assert.equal(row['agent_name'], 'tool_agent');
        assert.deepEqual(row['reward_model'], { style: 'rule', ground_truth: expected.answer });
        const extra = row['extra_info'] as { split: string; index: number; row_id: string; row: string };
        assert.equal(extra.split, split);
        assert.equal(extra.index, i);
        assert.equal(extra.row_id, expected.id);
        const { source: _s, ...written } = expected;
        assert.deepEqual(JSON.parse(extra.row), written, `${file} row ${i}: the whole row travels in extra_info.row`);
      });
    }
    assert.equal(result.trainRows, 40);
    assert.equal(result.valRows, 6);
  });

  it("writes a launch script whose every Hydra key is one of verl's config keys", () => {
    const script = fs.readFileSync(path.join(out, 'launch.sh'), 'utf8');
    assert.ok((fs.statSync(path.join(out, 'launch.sh')).mode & 0o100) !== 0, 'executable');
    const overrides = [...script.matchAll(/^ {2}'?([a-z_][\w.]*)=(.*?)'? \\$/gm)].map((m) => [m[1], m[2]]);
    assert.ok(overrides.length >= 40, `${overrides.length} overrides`);
    const unknown = overrides.map(([key]) => key).filter((key) => !VERL_KEYS.has(key));
    assert.deepEqual(unknown, [], 'keys verl does not have');
    const value = (key: string) => overrides.find(([k]) => k === key)?.[1];
    assert.equal(value('algorithm.adv_estimator'), 'grpo');
    assert.equal(value('actor_rollout_ref.rollout.n'), '4');
    assert.equal(value('data.train_batch_size'), '2');
    assert.equal(value('actor_rollout_ref.actor.optim.lr'), '0.001');
    assert.equal(value('actor_rollout_ref.actor.optim.betas'), '[0.9,0.999]');
    assert.equal(value('actor_rollout_ref.rollout.multi_turn.max_assistant_turns'), '3');
    assert.equal(value('actor_rollout_ref.rollout.multi_turn.max_tool_response_length'), '256');
    assert.equal(value('data.apply_chat_template_kwargs'), '{enable_thinking:false}');
    assert.equal(value('custom_reward_function.name'), 'compute_score_batch');
    assert.equal(value('reward_model.reward_manager'), 'batch');
    assert.equal(value('trainer.total_training_steps'), '3');
    assert.match(script, /SERVE_TOOLS_URL="\$\{SERVE_TOOLS_URL:-http:\/\/10\.0\.0\.5:8808\}"/);
    const syntax = spawnSync('bash', ['-n', path.join(out, 'launch.sh')], { encoding: 'utf8' });
    assert.equal(syntax.status, 0, syntax.stderr);
  });

  it('points the tool config and the MCP server file at serve-tools', () => {
    const tools = fs.readFileSync(path.join(out, 'tools/tool_config.yaml'), 'utf8');
    assert.match(tools, /class_name: verl\.tools\.mcp_base_tool\.MCPBaseTool/);
    assert.match(tools, /type: mcp/);
    assert.match(tools, /mcp_servers_config_path: tools\/mcp_server\.json/);
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(out, 'tools/mcp_server.json'), 'utf8')), {
      mcpServers: { 'rollout-studio': { url: 'http://10.0.0.5:8808/mcp', transport: 'http' } },
    });
    const reward = fs.readFileSync(path.join(out, 'reward/rollout_studio_reward.py'), 'utf8');
    assert.match(reward, /DEFAULT_URL = "http:\/\/10\.0\.0\.5:8808\/reward"/);
    // Every import is of Python's standard library (sys.stdlib_module_names, Python 3.10+).
    const check = `import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
names = {a.name.split('.')[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
names |= {n.module.split('.')[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
print(' '.join(sorted(names)))
sys.exit(0 if names <= set(sys.stdlib_module_names) else 1)`;
    const imports = spawnSync('/usr/bin/python3', ['-c', check, path.join(out, 'reward/rollout_studio_reward.py')], {
      encoding: 'utf8',
    });
    assert.equal(imports.status, 0, `imports beyond the standard library: ${imports.stdout}${imports.stderr}`);
    assert.equal(imports.stdout.trim(), 'json os urllib');
  });

  it('tables every mapped setting and every setting verl cannot express in the README', () => {
    const readme = fs.readFileSync(path.join(out, 'README.md'), 'utf8');
    for (const m of result.mapping.mapped)
      assert.ok(readme.includes(`| ${m.setting} | ${m.key} |`), `${m.setting} → ${m.key}`);
    for (const u of result.mapping.unmapped) assert.ok(readme.includes(`| ${u.setting} |`), u.setting);
    const unmapped = result.mapping.unmapped.map((u) => u.setting);
    for (const setting of [
      'sft',
      'rollout.budget.maxNewTokensPerTurn',
      'optimization.eps',
      'rewards (per-call placement)',
      'toolArgs (per-row tool arguments)',
    ])
      assert.ok(unmapped.includes(setting), setting);
  });
});
