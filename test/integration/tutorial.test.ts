/**
 * The tutorial, examples/currency-agent/README.md, followed as a new user would: an empty folder
 * with rollout-studio installed (here: linked to this checkout's built package, as `npm install`
 * would place it), the example's own tools.ts, rewards.ts, data.ts and config.ts copied in,
 * `npx tsx data.ts` and `rollout-studio train config.ts` — with fewer rows and RL steps so it
 * runs in CI. It checks that the path works (warm start, evaluations, GRPO steps
 * with calls of the tutorial's tool, a checkpoint the chat command could load), not what the
 * agent learns. The task (currency exchange) is in no example.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const CLI = path.join(ROOT, 'dist/trainer/cli.js');
const EXAMPLE = path.join(ROOT, 'examples/currency-agent');

/** The example's TypeScript files, as a user copies them into an empty folder. */
function tutorialFiles(): Record<string, string> {
  const names = fs.readdirSync(EXAMPLE).filter((f) => f.endsWith('.ts'));
  return Object.fromEntries(names.map((name) => [name, fs.readFileSync(path.join(EXAMPLE, name), 'utf8')]));
}

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'currency-agent-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function run(command: string, args: string[]): string {
  const result = spawnSync(command, args, {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, PATH: `${path.join(dir, 'node_modules/.bin')}${path.delimiter}${process.env.PATH}` },
  });
  assert.equal(result.status, 0, `${command} ${args.join(' ')} failed:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

describe('tutorial (examples/currency-agent): your own task from an empty folder', () => {
  it('trains the currency agent from the pretrained base: warm start, evaluations, GRPO with the tool', () => {
    assert.ok(fs.existsSync(CLI), `${CLI} is missing: build first (npm run build)`);
    const files = tutorialFiles();
    assert.deepEqual(Object.keys(files).sort(), ['config.ts', 'data.ts', 'rewards.ts', 'tools.ts']);
    // `npm init -y && npm install rollout-studio tsx`, offline: the package and tsx linked where npm puts them.
    fs.writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'currency-agent', version: '1.0.0', private: true }),
    );
    fs.mkdirSync(path.join(dir, 'node_modules/.bin'), { recursive: true });
    fs.symlinkSync(ROOT, path.join(dir, 'node_modules/rollout-studio'), 'dir');
    fs.symlinkSync(CLI, path.join(dir, 'node_modules/.bin/rollout-studio'));
    fs.symlinkSync(path.join(ROOT, 'node_modules/.bin/tsx'), path.join(dir, 'node_modules/.bin/tsx'));
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);

    run('tsx', ['data.ts', '24,4,16']);
    const lines = (file: string) =>
      fs
        .readFileSync(path.join(dir, 'data', file), 'utf8')
        .trim()
        .split('\n');
    assert.deepEqual(
      ['train.jsonl', 'heldout.jsonl', 'sft.jsonl'].map((f) => lines(f).length),
      [24, 4, 16],
    );

    const out = run('rollout-studio', ['train', 'config.ts', '--steps', '2', '--run-dir', 'run']);
    assert.match(out, /sft step 24\/24: loss/); // 16 demonstrations, batches of 8, 12 epochs
    // The warm start checked all 16 after each epoch, the last time after step 24.
    assert.match(
      out,
      /^sft check \(data\/sft\.jsonl, epoch 12\/12, 16 demonstrations trained on, written token for token\): tool calls \d+ of 16 \(\d+ %\), other turns \d+ of 16/m,
    );
    assert.match(out, /eval at step 0 over 4 rows: exact_match [\d.]+, reward/);
    assert.match(out, /step 2\/2: reward/);
    assert.match(out, /eval at step 2 over 4 rows: exact_match [\d.]+/);
    const runDir = path.join(dir, 'run');
    const record = JSON.parse(fs.readFileSync(path.join(runDir, 'run.json'), 'utf8'));
    assert.equal(record.status, 'finished');
    assert.match(
      record.model.path,
      /trainer[/\\]bases[/\\]weights[/\\]base$/,
      'rollout-studio:base is the shipped base',
    );
    const metrics = fs
      .readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      metrics.filter((m) => m.kind === 'train').map((m) => m.step),
      [1, 2],
    );
    // Each warm-start step is recorded once; the last one of each epoch carries its check.
    const sft = metrics.filter((m) => m.kind === 'sft');
    assert.deepEqual(
      sft.map((m) => m.step),
      Array.from({ length: 24 }, (_, i) => i + 1),
    );
    assert.deepEqual(
      sft.filter((m) => 'sft/check_calls' in m.values).map((m) => m.step),
      [2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24],
    );
    // Before RL, after step 1 (evaluations are on by default: every ⌈2 / 5⌉ = 1 step) and after.
    assert.deepEqual(
      metrics.filter((m) => m.kind === 'eval').map((m) => m.step),
      [0, 1, 2],
    );
    assert.match(out, /^best: step [012], exact_match [\d.]+ \(checkpoints\/best\)$/m);
    assert.ok(fs.existsSync(path.join(runDir, 'checkpoints', 'best', 'model.safetensors')));
    // Every rollout offered the tutorial's tool in the prompt (the schema from its zod arguments).
    const trajectories = fs
      .readFileSync(path.join(runDir, 'rollouts', 'step-000001.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(trajectories.length, 32);
    for (const t of trajectories as { turns: { role: string; text: string }[] }[]) {
      assert.match(t.turns[0].text, /"name": "exchange".*"amount": \{"type": "number"/s);
      assert.ok(t.turns.some((turn) => turn.role === 'assistant'));
    }
    assert.ok(fs.existsSync(path.join(runDir, 'checkpoints', 'step-000002', 'model.safetensors')));
  });
});
