/**
 * The first steps of a documented training run, pinned: the calculator example's own config (the
 * shipped base, its warm start, GRPO with its tool and reward) for two RL steps, compared with a
 * recorded fingerprint of what it sampled and scored.
 *
 * Why: the READMEs quote results of real runs (held-out scores before and after RL, curves), and
 * training is deterministic, so any change to the numbers is a change to the code's behaviour.
 * Between 2026-12-04 and 12-06 the calculator's and deep-search's documented results went stale
 * without anyone deciding it: schema-constrained tool calls (fd7cc95) and shorter error
 * observations (d6f4a79) changed what the policy samples, and no test said so. This test makes such a change a visible decision.
 *
 * When it fails because the change was meant: re-measure the documented results (each README
 * section that quotes a run says its command and date), then record the new fingerprint with
 *
 *   RECORD_FINGERPRINT=1 node test/harness/run-node-tests.mjs test/integration/training/documentedRun.test.ts
 *
 * What it pins: every sampled token id of both steps' trajectories, their rewards, and the
 * evaluations' scores. Rounding-level changes (the order of a sum) usually move none of them in
 * two steps, although they do move a 30-step run: those still need their author's judgement.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { RunStoreReader } from '../../../trainer/contract/runstore';
import { loadConfig } from '../../../trainer/bridges/usercode/loadConfig';
import { TrainingRun } from '../../../trainer/pipeline/training/trainingRun';
import { DEFAULTS, generateDataset } from '../../../examples/calculator/data';

const root = path.resolve(__dirname, '..', '..', '..');
const CONFIG = path.join(root, 'examples', 'calculator', 'config.ts');
const RECORDED = path.join(root, 'test', 'fixtures', 'documentedRunFingerprint.json');
const STEPS = 2;

interface Fingerprint {
  /** What a change of this fingerprint makes stale, for the reader of a failure. */
  note: string;
  recorded: string;
  steps: {
    step: number;
    tokens: string;
    rewardMean: number;
    responseTokensMean: number;
    callsPerTrajectory: number;
  }[];
  evaluations: { step: number; score: number | null }[];
}

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'documented-run-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** sha256 over the trajectories' identity and token ids, in the order the run store holds them. */
function tokenDigest(reader: RunStoreReader, step: number): string {
  const hash = crypto.createHash('sha256');
  for (const t of reader.trajectories(step).records)
    hash.update(`${t.rowId}|${t.group}|${t.sample}|${t.tokens.ids}|${t.rewards.total}\n`);
  return hash.digest('hex');
}

describe('the calculator example, as documented', () => {
  it('samples and scores its first two RL steps as recorded', async () => {
    // The example's data as `npx tsx examples/calculator/data.ts` writes it, in a folder of the test's own.
    generateDataset({ ...DEFAULTS, out: path.join(dir, 'data') });
    const loaded = await loadConfig(CONFIG);
    const config = { ...loaded, resolve: (p: string) => path.resolve(dir, p) };
    const runDir = path.join(dir, 'run');
    const result = await new TrainingRun(config, { runDir, steps: STEPS, inProcessDevice: true }).run();
    assert.equal(result.run.status, 'finished');

    const reader = new RunStoreReader(runDir);
    const metrics = reader.metrics().records;
    const train = metrics.filter((m) => m.kind === 'train');
    assert.deepEqual(
      train.map((m) => m.step),
      [1, 2],
    );
    const measured: Fingerprint = {
      note:
        "The calculator example's config, 2 RL steps (test/integration/training/documentedRun.test.ts). " +
        'A change here means the documented training results (READMEs: the demo, examples/*, ' +
        'trainer/bases, test/bench) were measured with different behaviour: re-measure them.',
      recorded: new Date().toISOString().slice(0, 10),
      steps: train.map((m) => ({
        step: m.step,
        tokens: tokenDigest(reader, m.step),
        rewardMean: m.values['reward/mean']!,
        responseTokensMean: m.values['length/response_mean']!,
        callsPerTrajectory: m.values['tools/calls_per_trajectory']!,
      })),
      evaluations: metrics
        .filter((m) => m.kind === 'eval')
        .map((m) => ({ step: m.step, score: m.values[`score/${reader.run().metric}`] ?? null })),
    };
    assert.ok(measured.evaluations.length >= 2, 'evaluated before and after');

    if (process.env['RECORD_FINGERPRINT'] === '1') {
      fs.writeFileSync(RECORDED, JSON.stringify(measured, null, 2) + '\n');
      console.log(`recorded ${path.relative(root, RECORDED)}`);
    }
    const recorded = JSON.parse(fs.readFileSync(RECORDED, 'utf8')) as Fingerprint;
    const pinned = (f: Fingerprint) => ({ steps: f.steps, evaluations: f.evaluations });
    if (!isDeepStrictEqual(pinned(measured), pinned(recorded)))
      assert.fail(
        `The calculator example's first ${STEPS} RL steps no longer sample or score what was recorded on ` +
          `${recorded.recorded}. If the change is meant, re-measure the documented training results and ` +
          'record the new fingerprint (RECORD_FINGERPRINT=1; see the top of this file).\n' +
          `measured: ${JSON.stringify(pinned(measured))}\nrecorded: ${JSON.stringify(pinned(recorded))}`,
      );
  });
});
