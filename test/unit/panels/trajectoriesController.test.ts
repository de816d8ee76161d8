import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RunDirectorySource } from '../../../extension/panels/source/runDirectorySource';
import { ROWS_PER_MESSAGE, TrajectoriesController } from '../../../extension/panels/trajectoriesController';
import { buildTrajectory, writeRecordedRun, recordedRunWriter } from '../../fixtures/recordedRun';
import { RunStoreReader, writeBranchSet } from '#trainer/contract/runstore';
import {
  PROTOCOL_VERSION,
  TrajectoriesToWebview,
  type OpenRunInDebuggerArgs,
  type StepSelection,
} from '#trainer/contract/protocol';

function setup(options: {
  steps: number;
  batch: number;
  status?: 'running' | 'finished';
  step?: StepSelection;
  debugger?: (args: OpenRunInDebuggerArgs) => Promise<void>;
  readBudgetBytes?: number;
}) {
  const dir = writeRecordedRun(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'traj-ctl-')), 'run-t'), {
    steps: options.steps,
    batch: options.batch,
    groupSize: 4,
    seed: 5,
    status: options.status ?? 'finished',
  });
  // The whole step at once, so message chunking is what these tests see.
  const source = new RunDirectorySource(dir, {
    pollIntervalMs: 0,
    watch: false,
    readBudgetBytes: options.readBudgetBytes ?? Number.POSITIVE_INFINITY,
  });
  const posted: TrajectoriesToWebview[] = [];
  const controller = new TrajectoriesController(
    source,
    (m) => posted.push(TrajectoriesToWebview.parse(m)),
    { openInDebugger: options.debugger ?? (async () => undefined) },
    options.step ?? 'follow',
  );
  return { dir, source, posted, controller };
}

const rowsOf = (posted: TrajectoriesToWebview[]) =>
  posted.filter((m): m is Extract<TrajectoriesToWebview, { type: 'rows' }> => m.type === 'rows');

describe('TrajectoriesController', () => {
  it('sends nothing before the webview is ready, then the run and the newest step’s rows', () => {
    const { posted, controller, source } = setup({ steps: 3, batch: 6 });
    source.refresh();
    assert.equal(posted.length, 0);
    controller.receive({ type: 'ready' });
    assert.equal(posted[0].type, 'run');
    const rows = rowsOf(posted);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].step, 3);
    assert.equal(rows[0].reset, true);
    assert.equal(rows[0].selection, 'follow');
    assert.equal(rows[0].rows.length, 6);
  });

  it('sends a large step in chunks, the first one resetting', () => {
    const { posted, controller } = setup({ steps: 1, batch: ROWS_PER_MESSAGE + 20 });
    controller.receive({ type: 'ready' });
    const rows = rowsOf(posted);
    assert.deepEqual(
      rows.map((m) => [m.reset, m.rows.length]),
      [
        [true, ROWS_PER_MESSAGE],
        [false, 20],
      ],
    );
  });

  it('sends a step read in parts as its first part, then the others as they are read', async () => {
    const { posted, controller, source } = setup({ steps: 1, batch: 60, readBudgetBytes: 50_000 });
    controller.receive({ type: 'ready' });
    await source.whenRead(1);
    const rows = rowsOf(posted);
    assert.ok(rows.length >= 2);
    assert.deepEqual(
      rows.map((m) => m.reset),
      [true, ...rows.slice(1).map(() => false)],
    );
    assert.deepEqual(
      rows.flatMap((m) => m.rows.map((r) => r.index)),
      Array.from({ length: 60 }, (_, i) => i),
    );
  });

  it('follows the newest step as the run grows, and stays on a pinned step', () => {
    const { dir, posted, controller, source } = setup({ steps: 2, batch: 4, status: 'running' });
    controller.receive({ type: 'ready' });
    const writer = recordedRunWriter(dir);
    let seed = 1;
    const rng = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    writer.appendTrajectories(3, [buildTrajectory(3, 0, 4, rng)]);
    posted.length = 0;
    source.refresh();
    assert.deepEqual(
      rowsOf(posted).map((m) => [m.step, m.reset, m.rows.length]),
      [[3, true, 1]],
      'following: the new step is shown',
    );
    posted.length = 0;
    writer.appendTrajectories(3, [buildTrajectory(3, 1, 4, rng)]);
    source.refresh();
    assert.deepEqual(
      rowsOf(posted).map((m) => [m.step, m.reset, m.rows.map((r) => r.index)]),
      [[3, false, [1]]],
      'rows of the shown step are appended, not re-sent',
    );

    controller.receive({ type: 'showStep', step: 1 });
    assert.equal(controller.shown, 1);
    posted.length = 0;
    writer.appendTrajectories(4, [buildTrajectory(4, 0, 4, rng)]);
    source.refresh();
    assert.deepEqual(rowsOf(posted), [], 'pinned: a new step does not move the table');
    assert.equal(posted.filter((m) => m.type === 'run').length, 1, 'the step list still updates');

    controller.receive({ type: 'showStep', step: 'follow' });
    assert.equal(controller.shown, 4);
  });

  it('shows a held-out evaluation beside the training steps, when asked and once it is recorded', () => {
    const { dir, posted, controller, source } = setup({ steps: 2, batch: 4, status: 'running' });
    let seed = 3;
    const rng = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    const writer = recordedRunWriter(dir);
    const evaluation = (step: number, rows: number) =>
      Array.from({ length: rows }, (_, i) => ({ ...buildTrajectory(step, i, 1, rng), advantage: undefined }));
    writer.writeEvaluation(0, evaluation(0, 3));
    source.refresh();
    controller.receive({ type: 'ready' });
    const run = posted.find((m) => m.type === 'run');
    assert.deepEqual(run?.type === 'run' && [run.steps, run.evaluations], [[1, 2], [0]]);

    posted.length = 0;
    controller.receive({ type: 'showStep', step: { evaluation: 0 } });
    assert.deepEqual(
      rowsOf(posted).map((m) => [m.set, m.step, m.reset, m.rows.map((r) => r.index)]),
      [['eval', 0, true, [0, 1, 2]]],
    );
    assert.equal(controller.shownEvaluation, 0);
    assert.equal(controller.shown, undefined, 'no training step is shown');
    controller.receive({ type: 'openTrajectory', set: 'eval', step: 0, index: 1 });
    const detail = posted.at(-1)!;
    assert.deepEqual(detail.type === 'trajectory' && [detail.set, detail.record], [
      'eval',
      new RunStoreReader(dir).evaluationTrajectories(0).records[1],
    ]);
    controller.receive({ type: 'openTrajectory', set: 'eval', step: 0, index: 9 });
    assert.deepEqual(posted.at(-1), {
      type: 'notice',
      level: 'error',
      message: 'The evaluation after step 0 has no trajectory 9.',
    });

    // New training steps do not move an evaluation off the screen.
    posted.length = 0;
    writer.appendTrajectories(3, [buildTrajectory(3, 0, 4, rng)]);
    source.refresh();
    assert.deepEqual(rowsOf(posted), []);

    // The evaluation after step 3 is asked for before it is written: nothing, then its rows.
    controller.receive({ type: 'showStep', step: { evaluation: 3 } });
    assert.deepEqual(posted.at(-1), { type: 'noSteps', selection: { evaluation: 3 } });
    posted.length = 0;
    writer.writeEvaluation(3, evaluation(3, 2));
    source.refresh();
    assert.deepEqual(
      posted.map((m) =>
        m.type === 'rows'
          ? [m.type, m.set, m.step, m.rows.length]
          : m.type === 'run'
            ? [m.type, m.evaluations]
            : [m.type],
      ),
      [
        ['run', [0, 3]],
        ['rows', 'eval', 3, 2],
      ],
    );
    controller.receive({ type: 'showStep', step: 'follow' });
    assert.equal(controller.shown, 3);
  });

  it('says so when no step has trajectories yet', () => {
    const { posted, controller } = setup({ steps: 0, batch: 4, status: 'running' });
    controller.receive({ type: 'ready' });
    assert.deepEqual(posted.at(-1), { type: 'noSteps', selection: 'follow' });
  });

  it('sends a trajectory in full only when its detail is asked for', () => {
    const { dir, posted, controller } = setup({ steps: 2, batch: 4 });
    controller.receive({ type: 'ready' });
    assert.ok(!JSON.stringify(posted).includes('"pieces"'), 'rows carry no token data');
    controller.receive({ type: 'openTrajectory', step: 1, index: 2 });
    const detail = posted.at(-1)!;
    assert.equal(detail.type, 'trajectory');
    assert.deepEqual(detail.type === 'trajectory' && detail.record, new RunStoreReader(dir).trajectories(1).records[2]);
    controller.receive({ type: 'openTrajectory', step: 1, index: 40 });
    assert.deepEqual(posted.at(-1), { type: 'notice', level: 'error', message: 'Step 1 has no trajectory 40.' });
  });

  it('lists a trajectory’s re-roll branches in its detail, passes Re-roll and Compare on, and says when branches change', () => {
    const reroll: unknown[] = [];
    const shown: unknown[] = [];
    const dir = writeRecordedRun(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'traj-ctl-')), 'run-b'), {
      steps: 1,
      batch: 2,
      groupSize: 2,
      seed: 5,
    });
    const parent = new RunStoreReader(dir).trajectories(1).records[1];
    const branch = { ...parent, index: 0, rewards: { ...parent.rewards, total: parent.rewards.total + 1 } };
    writeBranchSet(dir, {
      protocol: PROTOCOL_VERSION,
      id: 'b-1',
      createdAt: '2026-12-05T00:00:00Z',
      parent: { set: 'train', step: 1, index: 1, rowId: parent.rowId },
      cut: { turn: 0, at: 'start', tokenIndex: parent.lengths.prompt },
      edits: [],
      checkpoint: { spec: 'best', path: path.join(dir, 'checkpoints', 'best') },
      sampling: { temperature: 1, topK: 0, topP: 1, seed: 0, followsParent: false },
      tools: { source: 'live' },
      branches: [{ trajectory: branch, firstDivergence: 50 }],
    });
    const posted: TrajectoriesToWebview[] = [];
    const source = new RunDirectorySource(dir, { pollIntervalMs: 0, watch: false });
    const controller = new TrajectoriesController(source, (m) => posted.push(TrajectoriesToWebview.parse(m)), {
      openInDebugger: async () => undefined,
      reroll: (a) => reroll.push(a),
      showBranch: (a) => shown.push(a),
    });
    controller.receive({ type: 'ready' });
    controller.receive({ type: 'openTrajectory', step: 1, index: 1 });
    const detail = posted.at(-1)!;
    assert.ok(detail.type === 'trajectory');
    assert.deepEqual(
      detail.branches.map((b) => [b.id, b.branch, b.checkpoint, b.rewards.total, b.firstDivergence]),
      [['b-1', 0, 'best', parent.rewards.total + 1, 50]],
    );
    controller.receive({ type: 'openTrajectory', step: 1, index: 0 });
    assert.deepEqual((posted.at(-1) as { branches: unknown[] }).branches, [], 'branches stay with their parent');
    controller.receive({ type: 'reroll', step: 1, index: 1 });
    controller.receive({ type: 'showBranch', id: 'b-1', branch: 0 });
    assert.deepEqual(reroll, [{ runDirectory: dir, step: 1, index: 1 }]);
    assert.deepEqual(shown, [{ runDirectory: dir, id: 'b-1', branch: 0 }]);
    controller.branchesChanged(dir, 1, 1);
    assert.deepEqual(posted.at(-1), { type: 'branchesChanged', step: 1, index: 1 });
    const count = posted.length;
    controller.branchesChanged(path.join(dir, '..', 'another-run'), 1, 1);
    assert.equal(posted.length, count, 'another run’s branches are not this panel’s');
  });

  it('asks the debugger to open the trajectory, and shows why when it cannot', async () => {
    const calls: OpenRunInDebuggerArgs[] = [];
    const { dir, posted, controller } = setup({
      steps: 1,
      batch: 2,
      debugger: async (args) => {
        calls.push(args);
        throw new Error('no replay debugger here');
      },
    });
    controller.receive({ type: 'ready' });
    controller.receive({ type: 'openInDebugger', step: 1, index: 1 });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(calls, [{ runDirectory: dir, step: 1, trajectory: 1 }]);
    assert.deepEqual(posted.at(-1), { type: 'notice', level: 'error', message: 'no replay debugger here' });
  });

  it('rejects a malformed message, naming the field', () => {
    const { controller } = setup({ steps: 1, batch: 2 });
    assert.throws(
      () => controller.receive({ type: 'showStep', step: -1 }),
      /message from the Trajectories panel: step/,
    );
    assert.throws(() => controller.receive({ type: 'delete' }), /message from the Trajectories panel: type/);
  });

  it('tells the webview whether the workspace is trusted when it starts, and again when trust is granted', () => {
    const dir = writeRecordedRun(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'traj-ctl-')), 'run-r'), {
      steps: 1,
      batch: 2,
      groupSize: 2,
      seed: 5,
    });
    let trusted = false;
    const posted: TrajectoriesToWebview[] = [];
    const source = new RunDirectorySource(dir, { pollIntervalMs: 0, watch: false });
    const controller = new TrajectoriesController(source, (m) => posted.push(TrajectoriesToWebview.parse(m)), {
      openInDebugger: async () => undefined,
      reroll: () => undefined,
      trusted: () => trusted,
    });
    const trust = () => posted.filter((m) => m.type === 'trust');
    controller.trustChanged();
    assert.deepEqual(trust(), [], 'nothing before the webview is ready');
    controller.receive({ type: 'ready' });
    assert.deepEqual(trust(), [{ type: 'trust', trusted: false }], 'Restricted Mode: the panel offers no Re-roll…');
    trusted = true;
    controller.trustChanged();
    assert.deepEqual(trust().at(-1), { type: 'trust', trusted: true });
    controller.dispose();
  });
});
