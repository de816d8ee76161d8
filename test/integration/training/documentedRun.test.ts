/**
 * The first steps of the documented training runs, pinned: the multi-hop demo's and the
 * calculator's own configs (the shipped base, their warm starts, GRPO with their tools, rewards
 * and process rewards) for two RL steps each, compared with a recorded fingerprint of what they
 * sampled and scored.
 *
 * Why: the READMEs quote results of real runs (held-out scores before and after RL, curves), and
 * training is deterministic, so any change to the numbers is a change to the code's behaviour.
 * Between 2026-12-04 and 12-06 the calculator's and deep-search's documented results went stale
 * without anyone deciding it: schema-constrained tool calls (fd7cc95) and shorter error
 * observations (d6f4a79) changed what the policy samples, and no test said so. This test makes
 * such a change a visible decision.
 *
 * When it fails because the change was meant: re-measure the documented results (each README
 * section that quotes a run says its command and date), then record the new fingerprint with
 *
 *   RECORD_FINGERPRINT=1 node test/harness/run-node-tests.mjs test/integration/training/documentedRun.test.ts
 *
 * What it pins: every sampled token id of both steps' trajectories, their rewards, and the
 * evaluations' scores. Rounding-level changes (the order of a sum) usually move none of them in
 * two steps, although they do move a 16- or 30-step run: those still need their author's judgement.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { RunStoreReader } from '#trainer/contract/runstore';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import * as calculator from '../../../examples/calculator/data';
import * as multihop from '../../../examples/multihop-search/data';

const root = path.resolve(__dirname, '..', '..', '..');
const RECORDED = path.join(root, 'test', 'fixtures', 'documentedRunFingerprint.json');
const STEPS = 2;

/** Each example as its README's command runs it: its data generator's defaults, its config. */
const EXAMPLES: Record<string, (out: string) => unknown> = {
  'multihop-search': (out) => multihop.generateDataset({ ...multihop.DEFAULTS, out }),
  calculator: (out) => calculator.generateDataset({ ...calculator.DEFAULTS, out }),
};

interface RunFingerprint {
  steps: {
    step: number;
    tokens: string;
    rewardMean: number;
    responseTokensMean: number;
    callsPerTrajectory: number;
  }[];
  evaluations: { step: number; score: number | null }[];
}

interface Recorded {
  /** What a change of this fingerprint makes stale, for the reader of a failure. */
  note: string;
  recorded: string;
  examples: Record<string, RunFingerprint>;
}

let dir: string;
const measured: Record<string, RunFingerprint> = {};
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'documented-run-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** sha256 over the trajectories' identity, token ids and rewards, in the order the run store holds them. */
function tokenDigest(reader: RunStoreReader, step: number): string {
  const hash = crypto.createHash('sha256');
  for (const t of reader.trajectories(step).records)
    hash.update(`${t.rowId}|${t.group}|${t.sample}|${t.tokens.ids}|${t.rewards.total}\n`);
  return hash.digest('hex');
}

async function fingerprint(example: string): Promise<RunFingerprint> {
  // The example's data as its data.ts writes it by default, in a folder of the test's own.
  const exampleDir = path.join(dir, example);
  EXAMPLES[example]!(path.join(exampleDir, 'data'));
  const loaded = await loadConfig(path.join(root, 'examples', example, 'config.ts'));
  const config = { ...loaded, resolve: (p: string) => path.resolve(exampleDir, p) };
  const runDir = path.join(exampleDir, 'run');
  const result = await new TrainingRun(config, { runDir, steps: STEPS, inProcessDevice: true }).run();
  assert.equal(result.run.status, 'finished');

  const reader = new RunStoreReader(runDir);
  const metrics = reader.metrics().records;
  const train = metrics.filter((m) => m.kind === 'train');
  assert.deepEqual(
    train.map((m) => m.step),
    [1, 2],
  );
  const evaluations = metrics
    .filter((m) => m.kind === 'eval')
    .map((m) => ({ step: m.step, score: m.values[`score/${reader.run().metric}`] ?? null }));
  assert.ok(evaluations.length >= 2, 'evaluated before and after');
  return {
    steps: train.map((m) => ({
      step: m.step,
      tokens: tokenDigest(reader, m.step),
      rewardMean: m.values['reward/mean']!,
      responseTokensMean: m.values['length/response_mean']!,
      callsPerTrajectory: m.values['tools/calls_per_trajectory']!,
    })),
    evaluations,
  };
}

describe('the documented examples', () => {
  for (const example of Object.keys(EXAMPLES)) {
    it(`${example}: samples and scores its first two RL steps as recorded`, async () => {
      measured[example] = await fingerprint(example);
      if (process.env['RECORD_FINGERPRINT'] === '1') return;
      const recorded = JSON.parse(fs.readFileSync(RECORDED, 'utf8')) as Recorded;
      if (!isDeepStrictEqual(measured[example], recorded.examples[example]))
        assert.fail(
          `examples/${example}: its first ${STEPS} RL steps no longer sample or score what was recorded on ` +
            `${recorded.recorded}. If the change is meant, re-measure the documented training results and ` +
            'record the new fingerprint (RECORD_FINGERPRINT=1; see the top of this file).\n' +
            `measured: ${JSON.stringify(measured[example])}\nrecorded: ${JSON.stringify(recorded.examples[example])}`,
        );
    });
  }

  after(() => {
    if (process.env['RECORD_FINGERPRINT'] !== '1') return;
    assert.deepEqual(Object.keys(measured).sort(), Object.keys(EXAMPLES).sort(), 'every example ran');
    const record: Recorded = {
      note:
        "The multi-hop demo's and the calculator's configs, 2 RL steps each (test/integration/training/documentedRun.test.ts). " +
        'A change here means the documented training results (READMEs: the demo, examples/*, ' +
        'trainer/bases, test/bench) were measured with different behaviour: re-measure them.',
      recorded: new Date().toISOString().slice(0, 10),
      examples: measured,
    };
    fs.writeFileSync(RECORDED, JSON.stringify(record, null, 2) + '\n');
    console.log(`recorded ${path.relative(root, RECORDED)}`);
  });
});
